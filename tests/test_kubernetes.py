"""deploy/kubernetes: the manifests agree with each other and with the bot they run.

No cluster here, so the invariants are checked on the files: what a `kubectl apply` would only
show at 3 a.m. (a selector that matches nothing, a probe on a path the bot does not serve, a
secret written into the manifest) fails here instead.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from triage_bot.slack.http import HEALTH_PATH, METRICS_PATH, READY_PATH

ROOT = Path(__file__).resolve().parents[1]
KUBE = ROOT / "deploy" / "kubernetes"


def _docs() -> dict[str, dict]:
    out = {}
    for path in sorted(KUBE.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc:
                out[f"{doc['kind']}/{doc['metadata']['name']}" if "metadata" in doc else doc["kind"]] = doc
    return out


@pytest.fixture(scope="module")
def docs() -> dict[str, dict]:
    return _docs()


def _container(docs: dict[str, dict]) -> dict:
    [container] = docs["Deployment/triage-bot"]["spec"]["template"]["spec"]["containers"]
    return container


def test_two_replicas_whose_labels_the_service_and_the_monitor_select(docs) -> None:
    deployment = docs["Deployment/triage-bot"]["spec"]
    assert deployment["replicas"] == 2 and deployment["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    labels = deployment["template"]["metadata"]["labels"]
    assert deployment["selector"]["matchLabels"].items() <= labels.items()
    assert docs["Service/triage-bot"]["spec"]["selector"].items() <= labels.items()
    monitor = docs["ServiceMonitor/triage-bot"]["spec"]
    assert (
        monitor["selector"]["matchLabels"].items() <= docs["Service/triage-bot"]["metadata"]["labels"].items()
    )


def test_ports_and_probes_are_the_ones_the_bot_serves(docs) -> None:
    container = _container(docs)
    [port] = container["ports"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert port == {"name": "http", "containerPort": int(env["PORT"])}
    [service_port] = docs["Service/triage-bot"]["spec"]["ports"]
    assert service_port["targetPort"] == port["name"]
    assert container["livenessProbe"]["httpGet"] == {"path": HEALTH_PATH, "port": "http"}
    assert container["readinessProbe"]["httpGet"] == {"path": READY_PATH, "port": "http"}
    assert container["startupProbe"]["httpGet"]["path"] == HEALTH_PATH
    [endpoint] = docs["ServiceMonitor/triage-bot"]["spec"]["endpoints"]
    assert (endpoint["port"], endpoint["path"]) == ("http", METRICS_PATH)


def test_secrets_come_from_the_secret_and_never_from_the_manifest(docs) -> None:
    container = _container(docs)
    [source] = container["envFrom"]
    secret = docs["Secret/triage-bot"]
    assert source["secretRef"]["name"] == secret["metadata"]["name"]
    assert all(
        "CHANGE-ME" in str(v) or v.startswith("C0") for v in secret["stringData"].values()
    )  # only placeholders
    named = {e["name"] for e in container["env"]}
    assert not named & {
        "DATABASE_URL",
        "SLACK_BOT_TOKEN",
        "SLACK_SIGNING_SECRET",
        "SLACK_APP_TOKEN",
        "TRIAGE_ALERTMANAGER_TOKEN",
    }
    text = (KUBE / "deployment.yaml").read_text(encoding="utf-8")
    assert not re.search(r"xox[abp]-|xapp-|postgres(ql)?(\+\w+)?://\w+:[^@\s]+@", text)


def test_the_pod_runs_as_the_images_user_with_room_to_write_its_state(docs) -> None:
    pod = docs["Deployment/triage-bot"]["spec"]["template"]["spec"]
    uid = re.search(r"--uid (\d+)", (ROOT / "Dockerfile").read_text(encoding="utf-8"))
    assert uid is not None and pod["securityContext"]["runAsUser"] == int(uid.group(1))
    container = _container(docs)
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    env = {e["name"]: e.get("value") for e in container["env"]}
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert env["TRIAGE_DATA_DIR"] in mounts and "/tmp" in mounts  # the spool, the local inbox, temp files
    config_dir = str(Path(env["TRIAGE_ENGINES"]).parent)
    [engines] = [v for v in pod["volumes"] if v["name"] == mounts[config_dir]]
    configmap = docs[f"ConfigMap/{engines['configMap']['name']}"]
    assert Path(env["TRIAGE_ENGINES"]).name in configmap["data"]
    assert (
        pod["terminationGracePeriodSeconds"] >= 30
    )  # the bot finishes acked work for up to 10 s, then the outbox


def test_every_variable_set_in_the_manifests_is_documented(docs) -> None:
    documented = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    names = {e["name"] for e in _container(docs)["env"]} | set(docs["Secret/triage-bot"]["stringData"])
    missing = [
        n for n in names if n.startswith(("TRIAGE_", "SLACK_", "DATABASE_")) and f"`{n}`" not in documented
    ]
    assert missing == []


def test_kustomization_lists_files_that_exist(docs) -> None:
    resources = docs["Kustomization"]["resources"]
    assert resources and all((KUBE / name).is_file() for name in resources)
    assert (
        "secret.example.yaml" not in resources
    )  # the real Secret is created by hand, never applied from here
