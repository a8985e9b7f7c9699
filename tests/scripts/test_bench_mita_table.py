#!/usr/bin/env python3
"""scripts/bench_mita_table.py on hand-made rows: ingest of each raw format, medians and spreads, the ratio MiTA /
best dense, which SDPA backend won, and failed measurements shown as such. Run: python3 THIS_FILE (ctest runs it)."""
import csv
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLE = os.path.join(ROOT, "scripts", "bench_mita_table.py")


def text_of(path):
    with open(path) as f:
        return f.read()


def run(*args):
    p = subprocess.run([sys.executable, TABLE, *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError(f"bench_mita_table.py {' '.join(args)} failed:\n{p.stdout}{p.stderr}")
    return p.stdout


class BenchMitaTable(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.rows = os.path.join(self.dir.name, "rows.jsonl")

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def read_rows(self):
        return [json.loads(line) for line in text_of(self.rows).splitlines()]

    def ingest(self, *args):
        return run("ingest", "--rows", self.rows, "--commit", "abc1234", *args)

    def test_vitrain_rows_in_steps_per_second_and_the_median_of_the_windows(self):
        line = {"impl": "vitrain", "model": "sequence", "attention": "mita", "m": 128, "k": 128, "batch_size": 32,
                "amp": True, "train_runs": [320.0, 352.0, 288.0], "infer_runs": None,
                "train_peak_mem_gib": 1.5}
        raw = self.write("vt.jsonl", json.dumps(line) + "\n")
        self.ingest(raw, "--source", "vitrain", "--part", "c", "--model", "lra", "--impl", "ours-mita", "--N",
                    "4096", "--unit", "steps/s")
        (r,) = self.read_rows()
        self.assertEqual(r["runs"], [10.0, 11.0, 9.0])  # seq/s / batch 32
        self.assertEqual((r["median"], r["min"], r["max"]), (10.0, 9.0, 11.0))
        self.assertEqual((r["impl"], r["mode"], r["N"], r["batch"], r["m"], r["precision"], r["commit"]),
                         ("ours-mita", "train", 4096, 32, 128, "bf16", "abc1234"))
        self.assertEqual(r["error"], "")

    def test_a_failed_command_without_output_becomes_error_rows_for_each_impl_and_mode(self):
        self.ingest(os.path.join(self.dir.name, "missing.csv"), "--source", "mita_long", "--part", "d",
                    "--model", "fig5", "--impl", "ours-dense,ours-mita", "--modes", "infer",
                    "--error", "exit 1: CUDA out of memory")
        rows = self.read_rows()
        self.assertEqual([(r["impl"], r["mode"]) for r in rows], [("ours-dense", "infer"), ("ours-mita", "infer")])
        self.assertTrue(all(r["error"] == "exit 1: CUDA out of memory" for r in rows))

    def test_mita_long_csv_rows_become_samples_per_second(self):
        raw = self.write("ours.csv", "impl,mode,kind,shape,N,batch,m,k,iters,ms_per_batch,samples_per_s,"
                                     "tokens_per_s,peak_mem_gib,error,backend,runs_ms\n"
                                     "torch,model_infer,dense,C128H2,4096,16,0,0,5,4,4000,0,1.2,,cudnn,4;5;2\n"
                                     "vitrain,model_infer,mita,C128H2,4096,128,32,32,5,0,0,0,0,out of memory,,\n")
        self.ingest(raw, "--source", "mita_long", "--part", "d", "--model", "fig5")
        dense, mita = self.read_rows()
        self.assertEqual((dense["impl"], dense["backend"], dense["mode"]), ("torch-eager", "cudnn", "infer"))
        self.assertEqual(dense["runs"], [4000.0, 3200.0, 8000.0])  # 1000 · 16 / ms
        self.assertEqual(dense["median"], 4000.0)
        self.assertEqual((mita["impl"], mita["error"], mita["m"]), ("ours-mita", "out of memory", 32))

    def test_report_tables_ratios_winning_backend_errors_and_csv(self):
        def row(impl, runs, backend="", error="", mode="train", N=197):
            r = {"part": "a", "model": "deit_small_patch16_224", "impl": impl, "backend": backend, "mode": mode,
                 "N": N, "batch": 256, "runs": runs, "median": None, "min": None, "max": None, "unit": "img/s",
                 "error": error, "commit": "abc1234", "precision": "bf16"}
            if runs:
                r.update(median=sorted(runs)[len(runs) // 2], min=min(runs), max=max(runs))
            return r
        rows = [row("ours-mita", [110, 100, 130]), row("ours-dense", [180, 170, 185]),
                row("timm-eager", [150, 140, 160], "flash"), row("timm-eager", [200, 190, 210], "cudnn"),
                row("timm-eager", [], "efficient", "RuntimeError: No available kernel"),
                row("ours-mita", [], error="exit 1: error: [mita] unsupported", mode="infer"),
                row("ours-dense", [400, 390, 420], mode="infer")]
        with open(self.rows, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        md, out_csv = os.path.join(self.dir.name, "t.md"), os.path.join(self.dir.name, "t.csv")
        bench = self.write("BENCH.md", "# Benchmarks\n")
        raw = os.path.join(self.dir.name, "raw")
        text = run("report", self.rows, "--md", md, "--csv", out_csv, "--append", bench, "--copy-raw", raw,
                   "--date", "2026-12-01", "--command", "bash scripts/bench_mita.sh OUT")
        train = next(line for line in text.splitlines() if line.startswith("| deit_small_patch16_224 | bf16 | train"))
        cells = [c.strip() for c in train.strip("|").split("|")]
        self.assertEqual(cells[4], "110 (100–130)")                # ours MiTA
        self.assertEqual(cells[5], "180 (170–185)")                # ours dense
        self.assertEqual(cells[6], "200 (190–210) [cudnn]")        # the fastest backend wins the cell
        self.assertEqual(cells[7], "**0.55×** vs timm eager [cudnn]")  # 110 / 200
        infer = next(line for line in text.splitlines() if line.startswith("| deit_small_patch16_224 | bf16 | infer"))
        cells = [c.strip() for c in infer.strip("|").split("|")]
        self.assertEqual(cells[4], "failed: exit 1: [mita] unsupported")
        self.assertEqual(cells[7], "n/a")
        self.assertIn("- timm eager [efficient] deit_small_patch16_224 train N=197 B=256: "
                      "RuntimeError: No available kernel", text)
        self.assertIn("### MiTA vs dense attention, 2026-12-01 (abc1234)", text)
        self.assertEqual(text_of(md).strip(), text.strip())
        self.assertTrue(text_of(bench).startswith("# Benchmarks\n\n### MiTA vs dense attention, 2026-12-01"))
        table = list(csv.DictReader(text_of(out_csv).splitlines()))
        self.assertEqual(len(table), len(rows))
        self.assertEqual((table[3]["backend"], table[3]["median"], table[3]["runs"]), ("cudnn", "200", "200;190;210"))
        self.assertEqual(sorted(os.listdir(os.path.join(raw, "2026-12-01-abc1234"))),
                         ["rows.jsonl", "t.csv", "t.md"])


if __name__ == "__main__":
    unittest.main()
