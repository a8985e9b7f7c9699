#!/usr/bin/env python3
"""scripts/bench_gpu.sh with stand-ins for vitrain and timm (no GPU): one timm process per model and mode, a mode cut
by TIMM_MODE_TIMEOUT leaves a row naming the cut and a non-zero exit while the other modes' figures and the table
survive. Run: python3 THIS_FILE (ctest runs it)."""
import json
import os
import shutil
import stat
import subprocess
import tempfile
import textwrap
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Writes one row per (model, mode) it is asked for; max-autotune "tunes" longer than the test's limit.
FAKE_TIMM = textwrap.dedent("""\
    import json, sys, time
    a = sys.argv
    mode, out = a[a.index("--modes") + 1], a[a.index("--out") + 1]
    speed = {"eager": 5700.0, "compile": 8860.0, "reduce-overhead": 8930.0}
    if mode == "max-autotune":
        time.sleep(30)
    for model in a[a.index("--models") + 1:a.index("--modes")]:
        row = {"impl": "timm_" + mode.replace("-", "_"), "model": model, "batch_size": 256,
               "train_img_per_s": speed[mode], "infer_img_per_s": 3 * speed[mode],
               "train_peak_mem_gib": 8.5, "infer_peak_mem_gib": 0.6}
        open(out, "a").write(json.dumps(row) + "\\n")
    """)

FAKE_VITRAIN = textwrap.dedent("""\
    #!/usr/bin/env bash
    while [ $# -gt 0 ]; do [ "$1" = --json ] && json=$2; shift; done
    echo '{"impl":"vitrain","model":"deit_small_patch16_224","attention":"dense","batch_size":256,"train_img_per_s":8816.0,"infer_img_per_s":28171.0,"train_peak_mem_gib":8.7,"infer_peak_mem_gib":1.05,"cuda_graph":false}' >>"$json"
    """)


class BenchGpu(unittest.TestCase):
    def test_a_cut_mode_is_a_row_and_the_rest_survives(self):
        tmp = tempfile.mkdtemp()
        try:
            os.makedirs(os.path.join(tmp, "scripts"))
            for name in ("bench_gpu.sh", "bench_table.py"):
                shutil.copy(os.path.join(ROOT, "scripts", name), os.path.join(tmp, "scripts", name))
            with open(os.path.join(tmp, "scripts", "bench_timm.py"), "w") as f:
                f.write(FAKE_TIMM)
            vitrain = os.path.join(tmp, "vitrain")
            with open(vitrain, "w") as f:
                f.write(FAKE_VITRAIN)
            os.chmod(vitrain, os.stat(vitrain).st_mode | stat.S_IXUSR)
            out = os.path.join(tmp, "out")
            env = dict(os.environ, VITRAIN=vitrain, MODELS="deit_small_patch16_224", BATCHES="256",
                       ATTENTIONS="dense", GRAPH_MODES="eager", TIMM_MODE_TIMEOUT="3")
            p = subprocess.run(["bash", os.path.join(tmp, "scripts", "bench_gpu.sh"), out], env=env,
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)  # the cut mode is a failure
            self.assertIn("max-autotune FAILED (exit 124)", p.stderr)
            rows = [json.loads(l) for l in open(os.path.join(out, "bench.jsonl"))]
            impls = [r["impl"] for r in rows]
            self.assertEqual(impls, ["vitrain", "timm_eager", "timm_compile", "timm_reduce_overhead",
                                     "timm_max_autotune"])
            cut = rows[-1]
            self.assertIsNone(cut["train_img_per_s"])
            self.assertIn("TIMM_MODE_TIMEOUT=3", cut["error"])
            table = open(os.path.join(out, "table.md")).read()
            self.assertIn("| timm reduce overhead |", table)  # the strongest of the modes that finished
            self.assertIn("**0.99×**", table)  # 8816 / 8930
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    unittest.main()
