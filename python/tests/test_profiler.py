"""The profiler API mirrors torch.profiler: the schedule decides which
steps are recorded and when on_trace_ready fires, the table and trace hold
the recorded forwards, record_function ranges show, and the verdict comes
back as an object."""
import gzip
import json
import os
import re

import pytest
from conftest import randn, torch

import fmlp
from fmlp import ProfilerActivity

STEPS = 8


@pytest.fixture
def eager():
    return fmlp.MLP(64, 96, act="gelu_tanh", mode="eager"), randn(16, 64)


def run(prof, m, x, steps=STEPS):
    with torch.inference_mode():
        for _ in range(steps):
            with fmlp.record_function("my_block"):
                m(x)
            prof.step()


def rows_named(table, name):
    return [line for line in table.splitlines() if line.strip().startswith(name + " ")]


def calls_column(row):
    # Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg, # of Calls, ...
    return int(row.split()[6])


def test_schedule_fires_once_per_window(eager):
    m, x = eager
    seen = []
    sched = fmlp.schedule(wait=1, warmup=1, active=3, repeat=1)
    with fmlp.profile(activities=[ProfilerActivity.CPU], schedule=sched,
                      on_trace_ready=lambda p: seen.append((p.step_num, p.key_averages().table()))) as prof:
        run(prof, m, x)
    assert len(seen) == 1, "one window of 3 active steps, repeat=1: one trace"
    step, table = seen[0]
    assert step == 5, "the window closes at the step that ends the 3 active steps (after wait 1, warmup 1)"
    assert calls_column(rows_named(table, "my_block")[0]) == 3
    assert calls_column(rows_named(table, "fmlp::mlp")[0]) == 3
    gemm = [r for r in table.splitlines() if "cpu_gemm" in r]
    assert gemm and calls_column(gemm[0]) == 9, "eager GeGLU: 3 GEMMs per forward, 3 forwards"
    assert "Self CPU time total" in table


def test_repeat_windows(eager):
    m, x = eager
    seen = []
    with fmlp.profile(schedule=fmlp.schedule(wait=0, warmup=0, active=2, repeat=3),
                      on_trace_ready=lambda p: seen.append(p.step_num), activities=[ProfilerActivity.CPU]) as prof:
        run(prof, m, x, steps=7)
    assert seen == [2, 4, 6]


def test_table_sort_and_row_limit(eager):
    m, x = eager
    with fmlp.profile(activities=[ProfilerActivity.CPU], with_flops=True) as prof:
        run(prof, m, x, steps=2)
    full = prof.key_averages().table(sort_by="self_cpu_time_total")
    two = prof.key_averages().table(sort_by="count", row_limit=2)
    data = [line for line in two.splitlines() if line.strip() and not line.startswith("-") and "Name" not in line
            and "total" not in line]
    assert len(data) == 2
    # the rate is printed in the unit that suits it (MFLOP/s on a loaded machine, GFLOP/s or TFLOP/s on others)
    assert re.search(r"\d+\.\d+ [kMGTP]?FLOP/s", full)
    with pytest.raises(fmlp.InvalidArgument, match="not a column"):
        prof.key_averages().table(sort_by="wall_clock")


def test_export_chrome_trace(tmp_path, eager):
    m, x = eager
    with fmlp.profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                      schedule=fmlp.schedule(wait=0, warmup=0, active=2, repeat=1)) as prof:
        run(prof, m, x, steps=3)
    path = str(tmp_path / "trace.json")
    assert prof.export_chrome_trace(path) == [path]
    doc = json.load(open(path))
    events = doc["traceEvents"]
    cats = {e.get("cat") for e in events}
    assert {"cpu_op", "user_annotation", "kernel"} <= cats
    names = {e["name"] for e in events}
    assert "my_block" in names
    assert {n for n in names if n.startswith("ProfilerStep#")} == {"ProfilerStep#0", "ProfilerStep#1"}
    gz = str(tmp_path / "trace.json.gz")
    prof.export_chrome_trace(gz)
    assert json.loads(gzip.open(gz).read())["traceEvents"]


def test_tensorboard_trace_handler(tmp_path, eager):
    m, x = eager
    d = tmp_path / "tb"
    with fmlp.profile(activities=[ProfilerActivity.CPU], schedule=fmlp.schedule(wait=1, warmup=1, active=2),
                      on_trace_ready=fmlp.tensorboard_trace_handler(str(d), worker_name="w")) as prof:
        run(prof, m, x, steps=8)
    files = sorted(os.listdir(d))
    assert len(files) == 2 and all(f.startswith("w.") and f.endswith(".pt.trace.json") for f in files)


def test_summary_object_and_text(eager):
    m, x = eager
    sched = fmlp.schedule(wait=0, warmup=1, active=3, repeat=1)
    with fmlp.profile(activities=[ProfilerActivity.CPU], schedule=sched) as prof:
        run(prof, m, x, steps=5)
    s = prof.summary()
    assert isinstance(s, fmlp.Summary) and s.device == "cpu"
    assert s.steps == 3 and s.kernels_per_step == len(m.plan(16, "eager")) == 5
    assert s.bound in ("overhead-bound", "memory-bound", "compute-bound") and s.reason
    assert s.wall_us >= s.kernel_us > 0
    assert s.bound in str(s) and set(s.as_dict()) >= {"bound", "wall_us", "kernels_per_step"}
    text = prof.analyses()
    assert "Verdict" in text and "ProfilerStep#" in text
    assert "Verdict" not in prof.key_averages().table()


def test_record_function_decorator_and_no_profile(eager):
    m, x = eager

    @fmlp.record_function("decorated")
    def block():
        return m(x)

    with torch.inference_mode():
        block()  # no profile: a no-op
        with fmlp.profile(activities=[ProfilerActivity.CPU]) as prof:
            block()
    assert rows_named(prof.key_averages().table(), "decorated")


def test_profile_errors(eager):
    with pytest.raises(fmlp.InvalidArgument, match="fmlp.schedule"):
        fmlp.profile(schedule=lambda step: None)
    with pytest.raises(fmlp.InvalidArgument, match="active"):
        fmlp.schedule(wait=1, warmup=1, active=0)
    with pytest.raises(fmlp.InvalidArgument, match="activity"):
        fmlp.profile(activities=["tpu"])
    prof = fmlp.profile(activities=[ProfilerActivity.CPU])
    with pytest.raises(fmlp.InvalidArgument, match="not running"):
        prof.step()
    with pytest.raises(fmlp.InvalidArgument, match="not run"):
        prof.key_averages().table()


def test_torch_activity_names_are_accepted(eager):
    m, x = eager
    with fmlp.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        run(prof, m, x, steps=1)
    assert prof.summary().kernels_per_step == 5


def test_trace_readers(tmp_path, eager):
    m, x = eager
    paths = []
    for mode in ("eager", "fused"):
        m.mode = mode
        with fmlp.profile(activities=[ProfilerActivity.CPU], schedule=fmlp.schedule(wait=0, warmup=1,
                                                                                     active=2)) as prof:
            run(prof, m, x, steps=3)
        paths += prof.export_chrome_trace(str(tmp_path / (mode + ".json")))
    s = fmlp.trace.summarize(paths[0])
    assert s.summary.kernels_per_step == 5 and "Verdict" in s.text
    d = fmlp.trace.diff(*paths)
    assert "kernels per step" in d
