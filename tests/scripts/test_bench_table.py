#!/usr/bin/env python3
"""scripts/bench_table.py on hand-made rows: every timm mode gets a column, the strongest measured one is named and
the ratios are taken against it, a failed peer is neither a number nor the strongest, and cells with several timed
windows show their spread. Run: python3 THIS_FILE (ctest runs it)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLE = os.path.join(ROOT, "scripts", "bench_table.py")


def row(impl, train, infer, runs=None, **extra):
    r = {"impl": impl, "model": "deit_small_patch16_224", "batch_size": 256, "train_img_per_s": train,
         "infer_img_per_s": infer, "train_peak_mem_gib": 8.7, "infer_peak_mem_gib": 1.1}
    if runs:
        r["train_runs"] = runs
    r.update(extra)
    return r


class BenchTable(unittest.TestCase):
    def table(self, rows):
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            f.write("".join(json.dumps(r) + "\n" for r in rows))
        try:
            p = subprocess.run([sys.executable, TABLE, f.name], capture_output=True, text=True)
        finally:
            os.unlink(f.name)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def line_of(self, text, kind):
        """The model row of the `kind` (train / infer) table."""
        part = text.split(f"Batch 256, {kind}")[1]
        return next(l for l in part.splitlines() if l.startswith("| deit_small_patch16_224"))

    def test_strongest_peer_is_named_and_ratios_use_it(self):
        rows = [row("vitrain", 8800, 28000, [8790, 8800, 8815], attention="dense"),
                row("vitrain", 7586, 25600, attention="mita"),
                row("timm_eager", 5700, 20400),
                row("timm_compile", 8850, 26000, [8800, 8850, 8900]),
                row("timm_reduce_overhead", None, None, error="RuntimeError: graph capture failed"),
                row("timm_max_autotune", 9100, 27000)]
        text = self.table(rows)
        head = next(l for l in text.splitlines() if l.startswith("| model"))
        for col in ("timm eager img/s", "timm compile img/s", "timm reduce overhead img/s",
                    "timm max autotune img/s", "strongest timm", "dense vs strongest timm", "dense vs timm eager",
                    "mita vs our dense"):
            self.assertIn(col, head)
        train = self.line_of(text, "train")
        self.assertIn("8,800 (8,790–8,815)", train)  # spread of the windows
        self.assertIn("8,850 (8,800–8,900)", train)
        self.assertIn("| timm max autotune |", train)
        self.assertIn("**0.97×**", train)  # 8800 / 9100
        self.assertIn("**1.54×**", train)  # 8800 / 5700
        self.assertIn("**0.86×**", train)  # 7586 / 8800
        self.assertIn("| n/a |", train)  # the failed reduce-overhead run
        infer = self.line_of(text, "infer")
        self.assertIn("| timm max autotune |", infer)
        self.assertIn("**1.04×**", infer)  # 28000 / 27000

    def test_without_peers_there_is_no_strongest_column(self):
        text = self.table([row("vitrain", 8800, 28000, attention="dense")])
        self.assertNotIn("strongest", text)


if __name__ == "__main__":
    unittest.main()
