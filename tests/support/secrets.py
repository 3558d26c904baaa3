"""Secret forms people paste into Slack, each as it appears in a log, a shell or a config.

Each entry is (a line carrying the secret, the secret itself). The secrets are fake but shaped
like the real ones. Every sink (logs, tables, spool, outbox, replies) is tested against all of
them: none may come out in clear.
"""

from __future__ import annotations

SECRET_FORMS: list[tuple[str, str]] = [
    ("HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    (
        "huggingface-cli login --token hf_ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210",
        "hf_ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210",
    ),
    ("OPENAI_API_KEY=sk-proj-4f9aB7cD2eF1gH8iJ3kL6mN0pQ5rS", "sk-proj-4f9aB7cD2eF1gH8iJ3kL6mN0pQ5rS"),
    ("ANTHROPIC_API_KEY=sk-ant-api03-Zx81Lm27Qp56Ty90Wv34Rs12", "sk-ant-api03-Zx81Lm27Qp56Ty90Wv34Rs12"),
    ("AZURE_OPENAI_KEY=3f8a9c0d1e2b4f5a6c7d8e9f0a1b2c3d", "3f8a9c0d1e2b4f5a6c7d8e9f0a1b2c3d"),
    ("SERVICE_KEY=Qm9vbGVhbi1zZWNyZXQtdmFsdWUtOTk4", "Qm9vbGVhbi1zZWNyZXQtdmFsdWUtOTk4"),
    ("vllm serve my/model --api-key s3cr3t-Serve-Key-2291", "s3cr3t-Serve-Key-2291"),
    ("python -m sglang.launch_server --api_key Sgl-Secret-7781-xyzw", "Sgl-Secret-7781-xyzw"),
    ("trtllm-serve model --api-key=TrtKey_5512_abcdef", "TrtKey_5512_abcdef"),
    ("curl -H 'Authorization: Bearer eyTokn7Qw8Er9Ty0Ui1Op2' http://x/v1", "eyTokn7Qw8Er9Ty0Ui1Op2"),
    ("Authorization: Basic dXNlcjpodW50ZXIyLXBhc3N3b3Jk", "dXNlcjpodW50ZXIyLXBhc3N3b3Jk"),
    ("curl -u admin:Hunter2-Passw0rd https://registry", "Hunter2-Passw0rd"),
    ("DATABASE_URL=postgresql://triage:Pg-Pass-8812@db:5432/triage", "Pg-Pass-8812"),
    ("redis://:R3dis-Secret-Pass@cache:6379/0", "R3dis-Secret-Pass"),
    ("postgres://app:p@ss-with-at@db.internal/prod", "p@ss-with-at"),
    ("mysql -u root -pMyS3cretPass99 -h db", "MyS3cretPass99"),
    ("Cookie: session=9f8e7d6c5b4a39281706f5e4d3c2b1a0", "9f8e7d6c5b4a39281706f5e4d3c2b1a0"),
    ("Set-Cookie: auth_token=Zq12Wx34Ec56Rv78Tb90; Path=/", "Zq12Wx34Ec56Rv78Tb90"),
    ("x-api-key: XaK-11223344556677889900", "XaK-11223344556677889900"),
    (
        "SLACK_BOT_TOKEN=xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx",
        "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx",
    ),
    (
        "SLACK_APP_TOKEN=xapp-1-A0123456789-1234567890123-abcdef0123456789",
        "xapp-1-A0123456789-1234567890123-abcdef0123456789",
    ),
    ("webhook https://hooks.slack.com/services/T0000/B1111/XXXXyyyyZZZZ1234", "XXXXyyyyZZZZ1234"),
    ("SLACK_SIGNING_SECRET=8f742231b10e8888abcd99yyyzzz85a5", "8f742231b10e8888abcd99yyyzzz85a5"),
    ("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    (
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    ("GITHUB_TOKEN=ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789", "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"),
    (
        "NGC_API_KEY=nvapi-AbCdEfGhIjKlMnOpQrStUvWxYz_0123456789",
        "nvapi-AbCdEfGhIjKlMnOpQrStUvWxYz_0123456789",
    ),
    ("GOOGLE_API_KEY=AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"),
    (
        "id_token: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    ('{"password": "Js0n-Pa55word-Value"}', "Js0n-Pa55word-Value"),
    ("client_secret: cs-9Qw8Er7Ty6Ui5Op4As3Df2", "cs-9Qw8Er7Ty6Ui5Op4As3Df2"),
    ("WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567", "0123456789abcdef0123456789abcdef01234567"),
    (
        "export HUGGING_FACE_HUB_TOKEN=hf_QqWwEeRrTtYyUuIiOoPpAaSsDdFfGgHh11",
        "hf_QqWwEeRrTtYyUuIiOoPpAaSsDdFfGgHh11",
    ),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n-----END RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
    ),
    ("gsk_AbCdEfGhIjKlMnOpQrStUvWxYz0123 is my groq key", "gsk_AbCdEfGhIjKlMnOpQrStUvWxYz0123"),
]
