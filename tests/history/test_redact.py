"""Secrets are redacted before storage; ordinary engine output passes through untouched.

The secret samples are assembled at run time (prefix + body) so that this file does not itself
look like a leaked credential to secret scanners, while the strings under test have the real shape.
Engine log lines are kept at their real length.
"""

from __future__ import annotations

import pytest

from triage_bot.redaction import redact, redact_value

B62 = "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xYz5"  # 34 characters of a token alphabet


def _s(*parts: str) -> str:
    return "".join(parts)


HF = _s("hf_", B62)
OPENAI = _s("sk-proj-", B62, "Zq9_Xw-", B62[:12])
ANTHROPIC = _s("sk-ant-api03-", B62, "-", B62)
GITHUB = _s("ghp_", B62, "Q1")
GOOGLE = _s("AIza", "Sy", B62[:33])
NVIDIA = _s("nvapi-", B62, "-", B62[:10])
AWS_ID = _s("AKIA", "IOSFODNN7QWERTY1")
AWS_SECRET = _s("wJalrXUtnFEMI/K7MDENG/", "bPxRfiCYz1x2c3v4b5n6")
SLACK_BOT = _s("xoxb-", "1234567890123-1234567890123-", B62[:24])
SLACK_USER = _s("xoxp-", "1234567890123-1234567890123-1234567890123-", "0123456789abcdef0123456789abcdef")
SLACK_APP = _s("xapp-", "1-A0123456789-1234567890123-", "0123456789abcdef" * 4)
JWT = _s(
    "eyJ",
    "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
    ".eyJ",
    "zdWIiOiIxMjM0NTY3ODkwIn0",
    ".",
    "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
)
PEM_BODY = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\nVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"

CASES = [
    ("hf env", f"HF_TOKEN={HF} vllm serve meta-llama/Llama-3.1-8B", HF, "HF_TOKEN="),
    ("hf cli", f"$ huggingface-cli login --token {HF}\nLogin successful", HF, "Login successful"),
    ("hf python", f'login(token="{HF}")', HF, "login(token="),
    ("openai env", f"export OPENAI_API_KEY={OPENAI}", OPENAI, "export OPENAI_API_KEY="),
    (
        "openai code",
        f'client = OpenAI(api_key="{OPENAI}", base_url="http://10.0.0.5:8000/v1")',
        OPENAI,
        "base_url",
    ),
    ("anthropic", f"ANTHROPIC_API_KEY: {ANTHROPIC}", ANTHROPIC, "ANTHROPIC_API_KEY"),
    ("github pat", f"git clone https://{GITHUB}@github.com/org/repo.git", GITHUB, "github.com/org/repo.git"),
    ("google", f"GOOGLE_API_KEY={GOOGLE}", GOOGLE, "GOOGLE_API_KEY"),
    ("nvidia", f"NGC_API_KEY={NVIDIA} docker run nvcr.io/nim/meta/llama", NVIDIA, "docker run"),
    ("vllm --api-key", "vllm serve m --api-key token-abc123 --port 8000", "token-abc123", "--port 8000"),
    (
        "x-api-key header",
        "X-API-Key: 9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        "X-API-Key",
    ),
    (
        "yaml api_key",
        "llm:\n  api_key: 'q8Wz3Lk2Vn7Rt5Yp'\n  model: gpt-4o",
        "q8Wz3Lk2Vn7Rt5Yp",
        "model: gpt-4o",
    ),
    ("aws id", f"aws_access_key_id = {AWS_ID}", AWS_ID, "aws_access_key_id"),
    (
        "aws secret ini",
        f"[default]\naws_secret_access_key = {AWS_SECRET}\nregion = us-east-1",
        AWS_SECRET,
        "region",
    ),
    ("aws secret env", f"AWS_SECRET_ACCESS_KEY={AWS_SECRET} aws s3 ls", AWS_SECRET, "aws s3 ls"),
    (
        "bearer curl",
        f'curl -H "Authorization: Bearer {OPENAI}" http://10.0.0.5:8000/v1/models',
        OPENAI,
        "/v1/models",
    ),
    ("bearer jwt", f"Authorization: Bearer {JWT}", JWT, "Authorization: Bearer "),
    ("bearer bare", "requests sent with Bearer 7c2f9a1e5b3d8f60 failed", "7c2f9a1e5b3d8f60", "failed"),
    ("basic auth", "Authorization: Basic dXNlcjpodW50ZXIyMDI0", "dXNlcjpodW50ZXIyMDI0", "Basic"),
    ("proxy auth", "proxy-authorization: basic YWRtaW46c2VjcmV0", "YWRtaW46c2VjcmV0", "proxy-authorization"),
    ("jwt alone", f"token was {JWT}", JWT, "token was"),
    (
        "url password pg",
        "DATABASE_URL=postgresql://triage:S3cr3t-pa55@db:5432/triage",
        "S3cr3t-pa55",
        "@db:5432/triage",
    ),
    ("url password redis", "redis://:hunter2hunter2@cache:6379/0", "hunter2hunter2", "@cache:6379/0"),
    (
        "url pypi token",
        "https://__token__:pypi-AgEIcHlwaS5vcmc@upload.pypi.org/legacy/",
        "pypi-AgEIcHlwaS5vcmc",
        "upload",
    ),
    ("curl -u", "curl -u admin:Tr0ub4dor3 http://10.0.0.5:8000/metrics", "Tr0ub4dor3", "/metrics"),
    ("password yaml", "db:\n  password: correct-horse\n  user: triage", "correct-horse", "user: triage"),
    ("password json", '{"user": "triage", "password": "p@ss w0rd"}', "p@ss", '"user": "triage"'),
    ("slack bot", f"SLACK_BOT_TOKEN={SLACK_BOT}", SLACK_BOT, "SLACK_BOT_TOKEN="),
    ("slack user", f"token {SLACK_USER} revoked", SLACK_USER, "revoked"),
    ("slack app", f"SocketModeHandler(app, '{SLACK_APP}')", SLACK_APP, "SocketModeHandler"),
    (
        "slack webhook",
        "POST https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "hooks.slack.com",
    ),
    (
        "rsa key",
        f"key:\n-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}-----END RSA PRIVATE KEY-----\ndone",
        "MIIEow",
        "done",
    ),
    (
        "openssh key",
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY}-----END OPENSSH PRIVATE KEY-----",
        "MIIEow",
        "",
    ),
    ("ec key", f"-----BEGIN EC PRIVATE KEY-----\n{PEM_BODY}-----END EC PRIVATE KEY-----", "VTLw7on", ""),
    ("cut-off key", f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}", "VTLw7on", ""),
]


@pytest.mark.parametrize(("text", "secret", "context"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_secret_is_redacted_and_context_kept(text: str, secret: str, context: str) -> None:
    out = redact(text)
    assert secret not in out
    assert "[REDACTED:" in out
    assert context in out


ENGINE_LOG = r"""
INFO 10-14 12:32:47 metrics.py:351] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 45.3 tokens/s, Running: 3 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 93.1%, CPU KV cache usage: 0.0%.
[2024-05-01 10:00:00 TP0] Decode batch. #running-req: 12, #token: 53412, token usage: 0.93, gen throughput (token/s): 1502.33, #queue-req: 0
[2024-05-01 10:00:01 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_token_ratio: 0.7000 -> 0.7400
(VllmWorkerProcess pid=2421) ERROR 10-14 12:32:47 multiproc_worker_utils.py:233] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.88 GiB. GPU 3 has a total capacity of 21.96 GiB of which 1.29 GiB is free.
Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/vllm/worker/worker.py", line 229, in determine_num_available_blocks
    raise ValueError(
  File "<frozen importlib._bootstrap>", line 1050, in _gcd_import
ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.
RuntimeError: CUDA error: an illegal memory access was encountered
Fatal Python error: Segmentation fault at address 0x7f3a2c001234, rip 0x00007f3a2c0ffee0
!!!!!!! Segfault encountered !!!!!!!
NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory (errno 12) on comm 0x55d4c8e0b2a0 rank 3
[TensorRT-LLM][ERROR] Assertion failed: mMaxNumTokens > 0 (/home/jenkins/agent/workspace/LLM/main/L0_MergeRequest/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmRuntime.cpp:123)
commit 3f786850e387550fdab836ed7e6dc881de23001b (HEAD -> main, tag: v0.6.3)
pulling sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 from nvcr.io/nvidia/tritonserver:24.05-trtllm-python-py3
Received request cmpl-8f1d2c3b4a5e6f708192a3b4c5d6e7f8: prompt_token_ids: [128000, 9906, 11], params: SamplingParams(n=1, temperature=0.7, max_tokens=16)
model=meta-llama/Llama-3.1-70B-Instruct, tokenizer=meta-llama/Llama-3.1-70B-Instruct, tokenizer_mode=auto, max_num_batched_tokens=8192, enforce_eager=False
tokenizer_config: bos_token='<|begin_of_text|>', eos_token: "<|eot_id|>", pad_token=None, use_auth_token=True
request 123e4567-e89b-12d3-a456-426614174000 failed: 401 Unauthorized: Invalid username or password.
Cannot access gated repo for url https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/config.json.
curl http://10.0.0.5:8000/v1/completions -d '{"model": "llama", "max_tokens": 16, "prompt": "hi"}'
Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:03<00:00,  1.02it/s]
INFO:     10.0.0.7:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK
--api-key is not set; any client may call this server
max_model_len (131072) is larger than the KV cache can hold (token: 23456, tokens: 23456)
export CUDA_VISIBLE_DEVICES=0,1 NCCL_DEBUG=INFO VLLM_WORKER_MULTIPROC_METHOD=spawn PWD=/root/work
secret: false, password: null, api_key: EMPTY, client_secret=...
"""


def test_ordinary_engine_output_is_not_mangled() -> None:
    assert redact(ENGINE_LOG) == ENGINE_LOG


@pytest.mark.parametrize("text", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_redaction_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


def test_values_are_redacted_recursively_including_keys() -> None:
    values = {"headers": {"Authorization": f"Bearer {OPENAI}"}, "args": ["--token", HF], HF: 1, "n": 3}
    out = redact_value(values)
    assert OPENAI not in repr(out) and HF not in repr(out)
    assert out["n"] == 3


def test_one_megabyte_paste_is_redacted_in_linear_time() -> None:
    text = (ENGINE_LOG + f"HF_TOKEN={HF}\n") * (1_000_000 // len(ENGINE_LOG))
    out = redact(text)  # ~0.05 s (bench/bench_storage.py); RE2 cannot backtrack
    assert HF not in out
    # quadratic or worse for a backtracking engine: minutes, so a regression shows as a hung suite
    nasty = "a" * 200_000 + "=" + "b" * 200_000 + "://" + ":" * 100_000
    assert redact(nasty) == nasty
