"""When the bot speaks unprompted: a pasted failure yes, talk about a failure no."""

from __future__ import annotations

import pytest

from triage_bot.core import default_triager

OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 MiB. GPU 6 has a total capacity of 44.53 GiB of which 448.00 KiB is free."


@pytest.mark.parametrize(
    "chat",
    [
        "fixed it — the OOM was because someone left a jupyter kernel on GPU 0. torch.OutOfMemoryError: CUDA out of memory is gone now",
        "postmortem draft: yesterday's outage was NCCL watchdog timeout (Watchdog caught collective operation timeout) after a switch reboot, all good now",
        "TIL vLLM prints `No available memory for the cache blocks` when gpu-memory-utilization is too low",
    ],
)
def test_talk_about_a_failure_is_not_answered_unprompted(chat: str) -> None:
    result = default_triager().match(chat)
    assert result.primary is not None  # an explicit /triage still gets the answer
    assert not result.passive


@pytest.mark.parametrize(
    ("paste", "expected"),
    [
        (OOM, "generic.cuda_oom"),
        (
            "we keep getting torch.OutOfMemoryError: CUDA out of memory on prod since the upgrade, anyone?",
            "generic.cuda_oom",
        ),
        ("(VllmWorker rank=0 pid=1) ERROR 01-01 00:00:00 [worker.py:1] " + OOM, "generic.cuda_oom"),
        ("CUDA driver version is insufficient for CUDA runtime version", "generic.cuda_driver_mismatch"),
    ],
)
def test_pasted_failures_and_pleas_for_help_are_answered(paste: str, expected: str) -> None:
    result = default_triager().match(paste)
    assert result.primary is not None and result.primary.sig.id == expected
    assert result.passive


@pytest.mark.parametrize(
    "tag",
    [
        "[Feature]:",
        "[RFC]:",
        "[Feature Request]",
        "  [Docs]",
        "feat:",
        "Feat(api):",
        "docs(pd-disaggregation):",
        "refactor!:",
        "test(xpu):",
        "[TRTLLM-1234][fix]",
    ],
)
def test_a_request_for_change_quoting_an_error_is_not_answered_unprompted(tag: str) -> None:
    request = (
        f"{tag} say which free memory the cache needs\nToday it only prints:\n{OOM}\nIt should name the flag."
    )
    asked = default_triager().match(request)
    assert asked.primary is not None and asked.primary.sig.id == "generic.cuda_oom"  # /triage still answers
    assert not asked.passive
    bug = default_triager().match(request.replace(tag, "[Bug]:"))
    assert bug.passive  # the same text reported as a bug is answered


def test_a_change_tag_later_in_the_paste_changes_nothing() -> None:
    assert default_triager().match(f"{OOM}\nsee also [Feature] #123").passive


@pytest.mark.parametrize(
    "headings",
    [
        ("### Motivation", "### Related resources"),  # SGLang's feature request
        ("## Motivation", "## Modifications"),  # SGLang's pull request
        ("## Purpose", "## Test Plan"),  # vLLM's pull request
        ("## Description", "## Test Coverage"),  # TensorRT-LLM's pull request
        ("### 🚀 The feature, motivation and pitch", "### Alternatives"),  # vLLM's feature request
        ("**What type of PR is this?**", "**What this PR does / why we need it**:"),  # Kubernetes projects
    ],
)
def test_a_feature_or_pull_request_template_is_not_answered_unprompted(headings: tuple[str, str]) -> None:
    first, second = headings
    request = (
        f"Report the free memory the cache needs\n\n{first}\n\nToday it prints:\n{OOM}\n\n{second}\n\nnone"
    )
    assert not default_triager().match(request).passive
    as_bug = request.replace(first, "### 🐛 Describe the bug")
    assert default_triager().match(as_bug).passive  # a bug template's heading keeps it a report
