#!/usr/bin/env python3
"""The fault trials of scripts/faults.sh (see there for usage): every way a hostile user, a cluster or a disk can
hurt a run, repeated on generated data, each trial classified as

  crash          the process died by a signal, aborted, hung, said bad_alloc/terminate, or exited with a code
                 other than the one the case calls for;
  unclear error  it failed (or accepted something it must refuse) without naming the file, key or tensor;
  data lost      a resume did not end with the uninterrupted run's weights and metrics bit for bit, a checkpoint
                 that should exist does not, or damaged weights evaluated to a different result without an error.

One table goes to stdout (and OUT/faults.md); the notes of every bad trial to OUT/failures.txt. Exit status 1 when
any crash, unclear error or data loss was seen.
"""
import argparse
import gzip
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import time

CATEGORIES = ["kill -9 + resume", "stop signals", "image files", "damaged checkpoints", "hostile configs"]
CRASH_WORDS = ["bad_alloc", "terminate called", "Segmentation fault", "Aborted", "core dumped",
               "AddressSanitizer", "std::length_error", "Resource temporarily unavailable"]
# metrics.jsonl fields that a resumed run must reproduce exactly (timings and throughput vary).
EXACT_FIELDS = {"epoch", "step", "train_loss", "lr", "test_top1", "test_top5", "test_loss", "ema_top1",
                "ema_top5", "ema_loss", "best_metric", "bad_files", "test_bad_files"}


class Tally:
    def __init__(self):
        self.rows = {c: {"trials": 0, "crash": 0, "unclear": 0, "lost": 0} for c in CATEGORIES}
        self.notes = []

    def trial(self, category, verdict, note=""):
        """verdict: "ok", "crash", "unclear" or "lost"."""
        row = self.rows[category]
        row["trials"] += 1
        if verdict != "ok":
            row[verdict] += 1
            self.notes.append(f"[{category}] {verdict}: {note}")

    def bad(self):
        return sum(r["crash"] + r["unclear"] + r["lost"] for r in self.rows.values())

    def table(self):
        lines = ["| category | trials | crashes | unclear errors | data lost |", "|---|---:|---:|---:|---:|"]
        for c, r in self.rows.items():
            lines.append(f"| {c} | {r['trials']} | {r['crash']} | {r['unclear']} | {r['lost']} |")
        return "\n".join(lines)


class Vitrain:
    """Runs the binary; every call's command line and output go to OUT/logs/<n>.txt."""

    def __init__(self, binary, out):
        self.binary, self.logs, self.n = binary, os.path.join(out, "logs"), 0
        os.makedirs(self.logs, exist_ok=True)

    def _log(self, args, rc, text):
        self.n += 1
        path = os.path.join(self.logs, f"{self.n:04d}.txt")
        with open(path, "w") as f:
            f.write(" ".join(args) + f"\n# exit {rc}\n" + text)
        return path

    def run(self, args, timeout=120):
        """(exit code, output, log path); exit code -SIG when killed by a signal, None when it hung."""
        try:
            p = subprocess.run([self.binary] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=timeout)
            rc, text = p.returncode, p.stdout.decode(errors="replace")
        except subprocess.TimeoutExpired as e:
            rc, text = None, (e.stdout or b"").decode(errors="replace") + f"\n[faults] hung past {timeout} s"
        return rc, text, self._log(args, rc, text)

    def start(self, args):
        f = open(os.path.join(self.logs, f"bg{self.n + 1:04d}.txt"), "w")
        self.n += 1
        p = subprocess.Popen([self.binary] + args, stdout=f, stderr=subprocess.STDOUT)
        p.log_path = f.name
        p.log_file = f
        return p

    @staticmethod
    def finish(p, timeout=120):
        try:
            rc = p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            rc = None
        p.log_file.close()
        with open(p.log_path, errors="replace") as f:
            return rc, f.read()


def crashed(rc, text):
    """Why this run counts as a crash, or ""."""
    if rc is None:
        return "hung"
    if rc < 0:
        return f"killed by signal {-rc}"
    if rc in (134, 136, 139):
        return f"exit {rc} (abort/FPE/segfault)"
    for w in CRASH_WORDS:
        if w in text:
            return f"said '{w}'"
    return ""


# ---------------------------------------------------------------------------------------------------- data
def write_idx(path, magic_dims, payload):
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(struct.pack(">I", magic_dims[0]))
        for d in magic_dims[1:]:
            f.write(struct.pack(">I", d))
        f.write(payload)


def fashion_like(directory, n_train, n_test, seed=0):
    """Fashion-MNIST's four IDX files: 28x28 gray images, 10 classes, each class a bar pattern plus noise."""
    os.makedirs(directory, exist_ok=True)
    rng = random.Random(seed)
    for split, n in (("train", n_train), ("t10k", n_test)):
        labels = bytes(rng.randrange(10) for _ in range(n))
        pixels = bytearray()
        for lab in labels:
            for y in range(28):
                for x in range(28):
                    on = ((x + lab * 3) // (2 + lab % 4) + (y if lab % 2 else 0)) % 2
                    pixels.append(min(255, on * 170 + rng.randrange(60)))
        write_idx(os.path.join(directory, f"{split}-images-idx3-ubyte.gz"), (2051, n, 28, 28), bytes(pixels))
        write_idx(os.path.join(directory, f"{split}-labels-idx1-ubyte.gz"), (2049, n), labels)


def sets(pairs):
    return [a for k, v in pairs.items() for a in ("--set", f"{k}={v}")]


class Runs:
    """The small training run every category uses, on the generated Fashion-MNIST-shaped data."""

    def __init__(self, root, out, data_dir, epochs, train_images):
        self.config = os.path.join(root, "configs", "fashion_mnist_vit.yaml")
        self.base = {"data.data_dir": data_dir, "data.train_limit": 0, "data.test_limit": 0,
                     "train.epochs": epochs, "train.batch_size": 32, "train.global_batch_size": 0, "train.threads": 1,
                     "train.log_interval": 1,
                     "model.depth": 1, "model.embed_dim": 32, "model.num_heads": 2,
                     "train.recovery_interval": 15, "train.checkpoint_interval": 1, "eval.batch_size": 64}
        self.updates = epochs * (train_images // 32)
        self.out = out

    def train_args(self, output, extra=None):
        return ["train", "--config", self.config, "--device", "cpu"] + sets(
            dict(self.base, **{"train.output": output}, **(extra or {})))

    def eval_args(self, weights, extra=None):
        return ["eval", "--config", self.config, "--device", "cpu", "--weights", weights] + sets(
            dict(self.base, **(extra or {})))


def metrics_rows(path):
    """The exactly reproducible part of each metrics.jsonl row, in file order."""
    rows = []
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            rows.append(tuple(sorted((k, v) for k, v in row.items() if k in EXACT_FIELDS)))
    return rows


def compare_to_reference(ref, output):
    """"" when output/ holds the reference's final weights and metrics, else what differs."""
    model = os.path.join(output, "model.safetensors")
    if not os.path.exists(model):
        return "no model.safetensors at the end"
    with open(model, "rb") as f:
        if f.read() != ref["weights"]:
            return "final weights differ from the uninterrupted run's"
    try:
        rows = metrics_rows(os.path.join(output, "metrics.jsonl"))
    except (OSError, ValueError) as e:
        return f"metrics.jsonl unreadable: {e}"
    if rows != ref["metrics"]:
        extra = len(rows) - len(ref["metrics"])
        return f"metrics.jsonl differs from the uninterrupted run's ({len(rows)} rows, {extra:+d})"
    return ""


# ---------------------------------------------------------------------------------------------------- trials
def kill9_trials(vt, runs, ref, tally, n, rng, ref_seconds):
    """kill -9 at random moments (1-3 times), then --resume auto to the end: the reference run bit for bit."""
    for t in range(n):
        output = os.path.join(runs.out, "kill9", f"trial{t}")
        shutil.rmtree(output, ignore_errors=True)
        kills = rng.randint(1, 3)
        verdict, note = "ok", ""
        for _ in range(kills):
            p = vt.start(runs.train_args(output) + ["--resume", "auto"])
            time.sleep(rng.uniform(0.0, ref_seconds))
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
            rc, text = Vitrain.finish(p)
            if rc not in (0, -signal.SIGKILL) and crashed(rc, text):
                verdict, note = "crash", f"{p.log_path}: {crashed(rc, text)}"
                break
        if verdict == "ok":
            rc, text, log = vt.run(runs.train_args(output) + ["--resume", "auto"])
            why = crashed(rc, text)
            if why:
                verdict, note = "crash", f"{log}: final resume {why}"
            elif rc != 0:
                verdict, note = "lost", f"{log}: the final resume failed (exit {rc}): {last_error(text)}"
            else:
                diff = compare_to_reference(ref, output)
                if diff:
                    verdict, note = "lost", f"{log}: {diff} after {kills} kill(s)"
        tally.trial("kill -9 + resume", verdict, note)


def last_error(text):
    lines = [l for l in text.splitlines() if "error" in l.lower()]
    return (lines[-1] if lines else text.strip().splitlines()[-1] if text.strip() else "(no output)")[:300]


def wait_for_update(path, count, timeout=60):
    """Waits until train.log shows `count` update lines; False when it never does."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open(path, errors="replace") as f:
                if sum(1 for line in f if "] loss " in line) >= count:
                    return True
        except OSError:
            pass
        time.sleep(0.002)
    return False


def signal_trials(vt, runs, ref, tally, n, rng):
    """SIGTERM / SIGINT / SIGUSR1 mid-run: exit 128 + signal, a recovery checkpoint named, an exact resume."""
    sigs = [signal.SIGTERM, signal.SIGINT, signal.SIGUSR1]
    for t in range(n):
        sig = sigs[t % 3]
        output = os.path.join(runs.out, "signals", f"trial{t}")
        shutil.rmtree(output, ignore_errors=True)
        p = vt.start(runs.train_args(output))
        seen = wait_for_update(os.path.join(output, "train.log"), rng.randint(1, max(1, runs.updates - 3)))
        p.send_signal(sig)
        rc, text = Vitrain.finish(p)
        name = signal.Signals(sig).name
        recovery = os.path.join(output, "recovery.safetensors")
        why = crashed(rc, text)
        if why or not seen:
            tally.trial("stop signals", "crash", f"{p.log_path}: {name}: {why or 'no update logged'}")
            continue
        if rc == 0 and os.path.exists(os.path.join(output, "model.safetensors")):
            pass  # the signal came after the last update: the run finished, nothing to lose
        elif rc != 128 + sig:
            tally.trial("stop signals", "crash", f"{p.log_path}: {name}: exit {rc}, not {128 + sig}")
            continue
        elif not os.path.exists(recovery):
            tally.trial("stop signals", "lost", f"{p.log_path}: {name}: no recovery.safetensors written")
            continue
        elif recovery not in text or f"{name} received" not in text:
            tally.trial("stop signals", "unclear", f"{p.log_path}: {name}: the message names neither the "
                                                   "signal nor the recovery checkpoint")
            continue
        rc, text, log = vt.run(runs.train_args(output) + ["--resume", "auto"])
        why = crashed(rc, text)
        diff = compare_to_reference(ref, output) if rc == 0 else f"resume failed (exit {rc}): {last_error(text)}"
        if why:
            tally.trial("stop signals", "crash", f"{log}: resume after {name}: {why}")
        elif diff:
            tally.trial("stop signals", "lost", f"{log}: resume after {name}: {diff}")
        else:
            tally.trial("stop signals", "ok")


def read_hostile(path):
    """{file name: reason} as fault_images printed them."""
    with open(path) as f:
        return dict(line.rstrip("\n").split("\t", 1) for line in f if line.strip())


def image_trials(vt, fault_images, runs, tally, n, rng, out):
    """Hostile files dropped into an ImageFolder tree: `data check` names each; training skips and counts them;
    evaluation leaves them out and counts them; data.max_bad_files: 0 stops with the file named."""
    base = os.path.join(out, "images", "base")
    shutil.rmtree(base, ignore_errors=True)
    classes, per_train, per_val = 3, 8, 4
    with open(os.path.join(out, "images_hostile.txt"), "w") as f:
        subprocess.run([fault_images, base, str(classes), str(per_train), str(per_val)], stdout=f, check=True)
    hostile = read_hostile(os.path.join(out, "images_hostile.txt"))
    folder = {"data.dataset": "imagefolder", "model.in_chans": 3, "model.img_size": 32, "model.patch_size": 8,
              "model.num_classes": classes, "train.batch_size": 1, "train.epochs": 1, "data.workers": 2,
              "eval.batch_size": 4, "schedule.warmup_epochs": 0, "train.recovery_interval": 0,
              "model.attention.m": 4, "model.attention.k": 4}
    cat = "image files"
    for t in range(n):
        tree = os.path.join(out, "images", f"trial{t}")
        shutil.rmtree(tree, ignore_errors=True)
        shutil.copytree(base, tree, ignore=shutil.ignore_patterns("hostile"))
        placed = {"train": [], "val": []}
        for name in rng.sample(sorted(hostile), rng.randint(1, len(hostile))):
            split = rng.choice(["train", "val"])
            dst = os.path.join(tree, split, f"class{rng.randrange(classes)}", f"h{t}_{name}")
            shutil.copy(os.path.join(base, "hostile", name), dst)
            placed[split].append(dst)
        everyone = placed["train"] + placed["val"]
        cfg = dict(folder, **{"data.data_dir": tree})

        rc, text, log = vt.run(["data", "check", tree, "-j", "2"])
        missing = [p for p in everyone if f"bad: [data] {p}:" not in text]
        if crashed(rc, text):
            tally.trial(cat, "crash", f"{log}: data check: {crashed(rc, text)}")
        elif rc != 1 or missing or f": {len(everyone)} bad" not in text:
            tally.trial(cat, "unclear", f"{log}: data check (exit {rc}) did not name {missing or 'the count'}")
        else:
            tally.trial(cat, "ok")

        output = os.path.join(tree + "_run")
        shutil.rmtree(output, ignore_errors=True)
        rc, text, log = vt.run(runs.train_args(output, cfg))
        good_val = classes * per_val
        if crashed(rc, text):
            tally.trial(cat, "crash", f"{log}: train: {crashed(rc, text)}")
        elif rc != 0:
            tally.trial(cat, "crash", f"{log}: train exit {rc} with {len(everyone)} bad files "
                                      f"(max_bad_files 100): {last_error(text)}")
        else:
            unnamed = [p for p in everyone if p not in text]
            rows = [json.loads(l) for l in open(os.path.join(output, "metrics.jsonl"))]
            evals = [r for r in rows if "test_top1" in r]
            counted = evals[-1].get("test_bad_files") if evals else None
            if unnamed:
                tally.trial(cat, "unclear", f"{log}: train never named {unnamed}")
            elif f"({good_val} images)" not in text or counted != len(placed["val"]):
                tally.trial(cat, "lost", f"{log}: validation counted wrong: want {good_val} images and "
                                         f"test_bad_files {len(placed['val'])}, got {counted}")
            else:
                tally.trial(cat, "ok")
            rc, text, log = vt.run(runs.eval_args(os.path.join(output, "model.safetensors"), cfg) + ["--json"])
            res = [json.loads(l) for l in text.splitlines() if l.startswith("{")]
            if crashed(rc, text):
                tally.trial(cat, "crash", f"{log}: eval: {crashed(rc, text)}")
            elif rc != 0:
                tally.trial(cat, "crash", f"{log}: eval exit {rc}: {last_error(text)}")
            elif [p for p in placed["val"] if p not in text]:
                tally.trial(cat, "unclear", f"{log}: eval did not name every bad val/ file")
            elif not res or int(res[-1]["images"]) != good_val or int(res[-1]["bad_files"]) != len(placed["val"]):
                tally.trial(cat, "lost", f"{log}: eval counted {res[-1] if res else 'nothing'}; want {good_val} "
                                         f"images, {len(placed['val'])} bad files")
            else:
                tally.trial(cat, "ok")
        if placed["train"]:
            output = tree + "_strict"
            rc, text, log = vt.run(runs.train_args(output, dict(cfg, **{"data.max_bad_files": 0})))
            if crashed(rc, text):
                tally.trial(cat, "crash", f"{log}: max_bad_files 0: {crashed(rc, text)}")
            elif rc != 1:
                tally.trial(cat, "crash", f"{log}: max_bad_files 0 with a bad train/ file: exit {rc}, not 1")
            elif "max_bad_files" not in text or not any(p in last_error(text) for p in everyone):
                tally.trial(cat, "unclear", f"{log}: max_bad_files 0: the error names no file: {last_error(text)}")
            else:
                tally.trial(cat, "ok")


def eval_numbers(text):
    """top-1, top-5, loss and image count of `vitrain eval --json`'s results row."""
    rows = [json.loads(l) for l in text.splitlines() if l.startswith("{")]
    return [(r["top1"], r["top5"], r["loss"], r["images"]) for r in rows]


def safetensors_layout(blob):
    """(header length, {tensor: (begin, end)} as absolute file offsets)."""
    hlen = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + hlen])
    spans = {k: (8 + hlen + v["data_offsets"][0], 8 + hlen + v["data_offsets"][1])
             for k, v in header.items() if k != "__metadata__"}
    return hlen, spans


def damage(blob, kind, rng):
    """(damaged bytes, what a clear error must name besides the file: a tensor name or None)."""
    b = bytearray(blob)
    hlen, spans = safetensors_layout(blob)
    if kind == "data byte":
        name, (lo, hi) = rng.choice([(k, s) for k, s in spans.items() if s[1] > s[0]])
        i = rng.randrange(lo, hi)
        b[i] ^= rng.randrange(1, 256)
        return bytes(b), name
    if kind == "header byte":
        i = rng.randrange(0, 8 + hlen)
        b[i] ^= rng.randrange(1, 256)
        return bytes(b), None
    return bytes(b[:rng.randrange(0, len(b))]), None  # truncated


def checkpoint_trials(vt, runs, ref, tally, n, rng, stopped):
    """Damaged files: `vitrain eval` of damaged weights/checkpoints fails naming the file (and for a data byte the
    tensor) or, when the damage is harmless (a metadata value), gives the undamaged result; `--resume auto` over
    damaged checkpoints falls back to one that verifies (resuming exactly) or fails naming them."""
    cat = "damaged checkpoints"
    work = os.path.join(runs.out, "ckpt")
    os.makedirs(work, exist_ok=True)
    clean = {}
    for t in range(n):
        kind = ["data byte", "header byte", "truncated"][t % 3]
        # eval of a damaged weights file or training checkpoint
        src = os.path.join(ref["dir"], rng.choice(["model.safetensors", "last.safetensors", "best.safetensors"]))
        with open(src, "rb") as f:
            blob = f.read()
        if src not in clean:
            rc, text, _ = vt.run(runs.eval_args(src) + ["--json"])
            clean[src] = eval_numbers(text)
        bad, tensor = damage(blob, kind, rng)
        path = os.path.join(work, f"eval{t}_{os.path.basename(src)}")
        with open(path, "wb") as f:
            f.write(bad)
        rc, text, log = vt.run(runs.eval_args(path) + ["--json"])
        why = crashed(rc, text)
        if why:
            tally.trial(cat, "crash", f"{log}: eval of a {kind}: {why}")
        elif rc == 0:
            same = eval_numbers(text) == clean[src]
            tally.trial(cat, "ok" if same and kind == "header byte" else "lost",
                        f"{log}: eval of a {kind} in {os.path.basename(src)} exited 0 "
                        f"{'with the clean result' if same else 'with a different result'}")
        elif rc != 1:
            tally.trial(cat, "crash", f"{log}: eval of a {kind}: exit {rc}")
        elif path not in last_error(text) or (tensor and f"'{tensor}'" not in last_error(text)):
            tally.trial(cat, "unclear", f"{log}: eval of a {kind} (tensor {tensor}): {last_error(text)}")
        else:
            tally.trial(cat, "ok")

        # --resume auto over a run folder whose checkpoints are (partly) damaged
        output = os.path.join(work, f"resume{t}")
        shutil.rmtree(output, ignore_errors=True)
        shutil.copytree(stopped, output)
        candidates = sorted(f for f in os.listdir(output) if f.endswith(".safetensors"))
        victims = rng.sample(candidates, rng.randint(1, len(candidates)))
        for v in victims:
            p = os.path.join(output, v)
            with open(p, "rb") as f:
                blob = f.read()
            with open(p, "wb") as f:
                f.write(damage(blob, rng.choice(["data byte", "header byte", "truncated"]), rng)[0])
        rc, text, log = vt.run(runs.train_args(output) + ["--resume", "auto"])
        why = crashed(rc, text)
        resumable = [c for c in candidates if c in ("last.safetensors", "recovery.safetensors")
                     or c.startswith("checkpoint-")]
        intact = [c for c in resumable if c not in victims]
        damaged = [os.path.join(output, v) for v in victims if v in resumable]
        label = f"resume over damaged {victims}"
        if why:
            tally.trial(cat, "crash", f"{log}: {label}: {why}")
        elif intact and rc == 0:
            diff = compare_to_reference(ref, output)
            tally.trial(cat, "lost" if diff else "ok", f"{log}: {label}: {diff}")
        elif intact:
            tally.trial(cat, "lost", f"{log}: {label}: exit {rc} although {intact} are intact: {last_error(text)}")
        elif rc == 0:
            tally.trial(cat, "lost", f"{log}: {label}: every checkpoint damaged, yet it resumed (exit 0)")
        elif rc != 1:
            tally.trial(cat, "crash", f"{log}: {label}: exit {rc}")
        elif "no checkpoint in" not in text or any(d not in text for d in damaged):
            tally.trial(cat, "unclear", f"{log}: {label}: the error does not name each damaged file: "
                                        f"{last_error(text)}")
        else:
            tally.trial(cat, "ok")

        # --resume PATH of one damaged checkpoint: an error naming it
        path = os.path.join(work, f"explicit{t}.safetensors")
        with open(os.path.join(stopped, "recovery.safetensors"), "rb") as f:
            blob = f.read()
        with open(path, "wb") as f:
            f.write(damage(blob, kind, rng)[0])
        output = os.path.join(work, f"explicit{t}")
        shutil.rmtree(output, ignore_errors=True)
        rc, text, log = vt.run(runs.train_args(output) + ["--resume", path])
        why = crashed(rc, text)
        if why:
            tally.trial(cat, "crash", f"{log}: --resume of a {kind}: {why}")
        elif rc == 0:
            tally.trial(cat, "lost" if compare_to_reference(ref, output) else "ok",
                        f"{log}: --resume of a {kind} exited 0 and ended elsewhere than the uninterrupted run")
        elif rc != 1:
            tally.trial(cat, "crash", f"{log}: --resume of a {kind}: exit {rc}")
        elif path not in last_error(text):
            tally.trial(cat, "unclear", f"{log}: --resume of a {kind}: {last_error(text)}")
        else:
            tally.trial(cat, "ok")


INT_SIZES = ["model.embed_dim", "model.depth", "model.num_heads", "model.img_size", "model.patch_size",
             "model.in_chans", "model.num_classes", "data.workers", "train.batch_size", "eval.batch_size",
             "train.threads", "model.attention.m", "model.attention.k"]
INT_BAD = ["-1", "-2000000000", "2000000000", "1e30", ".inf", ".nan", "abc", "[1, 2]", "{a: 1}", "9.5"]
FLOATS = ["optim.lr", "optim.weight_decay", "schedule.warmup_epochs", "schedule.warmup_lr", "schedule.min_lr",
          "model.mlp_ratio", "optim.smoothing", "model.drop_path_rate", "data.hflip", "optim.opt_eps",
          "optim.clip_grad", "train.model_ema_decay", "train.recovery_minutes", "data.crop_pct"]
FLOAT_BAD = [".inf", "-.inf", ".nan", "-1", "-1e30", "abc", "[1, 2]", "{a: 1}", "1e400"]
# Each (overrides, config file text or None, what the error must name).
CURATED = [
    ({"optim.lr": ".inf"}, None, "optim.lr"), ({"optim.weight_decay": ".inf"}, None, "optim.weight_decay"),
    ({"schedule.warmup_epochs": ".inf"}, None, "schedule.warmup_epochs"),
    ({"model.embed_dim": "2000000000"}, None, "model.embed_dim"), ({"model.img_size": "70000"}, None,
                                                                    "model.img_size"),
    ({"model.mlp_ratio": "1e30"}, None, "model.mlp_ratio"), ({"data.workers": "100000"}, None, "data.workers"),
    ({"model.in_chans": "3"}, None, "model.in_chans"), ({"model.num_classes": "5"}, None, "model.num_classes"),
    ({"model.no_such_key": "1"}, None, "no_such_key"), ({"optim.nesterov_typo": "true"}, None, "nesterov_typo"),
    ({}, "", "{file}"), ({}, "\n# only a comment\n", "{file}"), ({}, "model: [unclosed\n", "{file}"),
    ({}, "model:\n  embed_dim: .inf\n", "embed_dim"), ({}, "optim:\n  lr: -1\n", "optim.lr"),
    ({}, "train:\n  batch_size: 99999999999999999999\n", "batch_size"), ({}, "\x00\x01\x02garbage", "{file}"),
    ({}, "model: 3\n", "model"),
    ({"model.name": "no_such_model"}, None, "no_such_model"), ({"data.data_dir": "/nonexistent/dir"}, None,
                                                                 "/nonexistent/dir"),
    ({"model.attention.type": "bogus"}, None, "model.attention.type"), ({"optim.opt_betas": "[0.9]"}, None,
                                                                          "optim.opt_betas"),
    ({"model.patch_size": "5"}, None, "patch_size"), ({"model.num_heads": "3"}, None, "num_heads"),
    ({"model.attention.k": "1000"}, None, "model.attention.k"),
    ({"train.resume": "/nonexistent/last.safetensors"}, None, "/nonexistent/last.safetensors"),
    ({"train.output": "/proc/version/run"}, None, "/proc/version"), ({"data.dataset": "imagenet21k"}, None,
                                                                       "imagenet21k"), ({}, "data:\n  mean: [0.5, .nan, 0.5]\n", "data.mean"),
]


def yaml_for(key, value):
    parts = key.split(".")
    return "".join("  " * i + p + ":\n" for i, p in enumerate(parts[:-1])) + "  " * (len(parts) - 1) + \
        f"{parts[-1]}: {value}\n"


def config_trials(vt, runs, tally, n, rng, out):
    """Hostile configs (curated, then random keys x hostile values, half by --set, half in the file): exit 1 with
    the key (or for a broken file, the file) named, before anything is built."""
    cat = "hostile configs"
    work = os.path.join(out, "configs")
    os.makedirs(work, exist_ok=True)
    cases = list(CURATED)
    for _ in range(n):
        key, value = (rng.choice(INT_SIZES), rng.choice(INT_BAD)) if rng.random() < 0.5 else \
            (rng.choice(FLOATS), rng.choice(FLOAT_BAD))
        if rng.random() < 0.5:
            cases.append(({key: value}, None, key))
        else:
            cases.append(({}, yaml_for(key, value), key.split(".")[-1]))
    for i, (overrides, text, want) in enumerate(cases):
        base = dict(runs.base, **{"train.output": os.path.join(work, f"run{i}"), "train.max_steps": 1})
        config = runs.config
        if text is not None:
            config = os.path.join(work, f"config{i}.yaml")
            with open(config, "w") as f:
                f.write(text)
            for k in list(base):  # the file's key wins: no --set for it
                if any(k.endswith("." + line.split(":")[0].strip()) for line in text.splitlines() if ":" in line):
                    base.pop(k)
        args = ["train", "--config", config, "--device", "cpu"] + sets(base) + sets(overrides)
        rc, out_text, log = vt.run(args, timeout=60)
        want = want.replace("{file}", config)
        why = crashed(rc, out_text)
        label = f"{overrides or ''}{' file ' + repr(text[:40]) if text is not None else ''}"
        if why:
            tally.trial(cat, "crash", f"{log}: {label}: {why}")
        elif rc == 0:
            tally.trial(cat, "unclear", f"{log}: {label}: accepted")
        elif rc != 1:
            tally.trial(cat, "crash", f"{log}: {label}: exit {rc}")
        elif want not in last_error(out_text):
            tally.trial(cat, "unclear", f"{log}: {label}: the error does not name '{want}': {last_error(out_text)}")
        else:
            tally.trial(cat, "ok")


# ---------------------------------------------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--vitrain", required=True)
    ap.add_argument("--fault-images", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--trials", type=int, default=int(os.environ.get("TRIALS", 3)))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("SEED", time.time_ns() % 100000)))
    ap.add_argument("--epochs", type=int, default=int(os.environ.get("EPOCHS", 2)))
    ap.add_argument("--train-images", type=int, default=int(os.environ.get("TRAIN_IMAGES", 1600)))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = random.Random(a.seed)
    started = time.time()
    print(f"faults: {a.trials} trials per category, seed {a.seed} (SEED={a.seed} repeats this run), output {a.out}")
    data_dir = os.path.join(a.out, "fashion-like")
    fashion_like(data_dir, a.train_images, 64)
    vt = Vitrain(a.vitrain, a.out)
    runs = Runs(a.root, a.out, data_dir, a.epochs, a.train_images)
    tally = Tally()

    # The uninterrupted reference run, and one stopped by train.max_steps with several checkpoints on disk.
    ref_dir = os.path.join(a.out, "reference")
    shutil.rmtree(ref_dir, ignore_errors=True)
    t0 = time.time()
    rc, text, log = vt.run(runs.train_args(ref_dir))
    ref_seconds = time.time() - t0
    if rc != 0:
        sys.exit(f"faults: the reference run failed (exit {rc}), see {log}")
    with open(os.path.join(ref_dir, "model.safetensors"), "rb") as f:
        ref = {"dir": ref_dir, "weights": f.read(), "metrics": metrics_rows(os.path.join(ref_dir, "metrics.jsonl"))}
    stopped = os.path.join(a.out, "stopped")
    shutil.rmtree(stopped, ignore_errors=True)
    rc, text, log = vt.run(runs.train_args(stopped, {"train.max_steps": runs.updates * 3 // 4}))
    if rc != 0:
        sys.exit(f"faults: the stopped run failed (exit {rc}), see {log}")

    for name, fn in [("kill -9", lambda: kill9_trials(vt, runs, ref, tally, a.trials, rng, ref_seconds)),
                     ("signals", lambda: signal_trials(vt, runs, ref, tally, a.trials, rng)),
                     ("images", lambda: image_trials(vt, a.fault_images, runs, tally, a.trials, rng, a.out)),
                     ("checkpoints", lambda: checkpoint_trials(vt, runs, ref, tally, a.trials, rng, stopped)),
                     ("configs", lambda: config_trials(vt, runs, tally, a.trials, rng, a.out))]:
        t = time.time()
        fn()
        print(f"faults: {name} done in {time.time() - t:.1f} s", flush=True)

    table = tally.table()
    print(table)
    print(f"faults: {time.time() - started:.0f} s; logs of every run under {vt.logs}")
    with open(os.path.join(a.out, "faults.md"), "w") as f:
        f.write(table + "\n")
    with open(os.path.join(a.out, "failures.txt"), "w") as f:
        f.write("\n".join(tally.notes) + ("\n" if tally.notes else ""))
    if tally.bad():
        print("\n".join(tally.notes))
        sys.exit(1)


if __name__ == "__main__":
    main()
