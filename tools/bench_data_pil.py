# The Pillow + numpy baseline for tools/bench_data.cpp: the same files, torchvision's train transform steps
# (decode, RandomResizedCrop 224 bicubic, flip, ToTensor + Normalize) on one core.
# Usage: /usr/bin/python3 tools/bench_data_pil.py DIR [--make | --photos]
#   --make writes 64 synthetic 500x375 JPEGs to DIR/c0; --photos writes the photos of Debian's opencv-doc
#   (examples/data, without the left*/right* calibration shots) resized to ImageNet's long side 500, quality 90.
# Needs Debian's python3-pil and python3-numpy.
import math
import os
import random
import sys
import time

import numpy as np
from PIL import Image

MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32).reshape(3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32).reshape(3, 1, 1)


def make(dir_):
    os.makedirs(os.path.join(dir_, "c0"), exist_ok=True)
    x = np.arange(500)[None, :, None]
    y = np.arange(375)[:, None, None]
    c = np.arange(3)[None, None, :]
    for i in range(64):
        v = 128 + 60 * np.sin(0.02 * (x + 7 * i) + c) * np.cos(0.03 * y) + ((x * 31 + y * 17 + i) % 23)
        Image.fromarray(v.astype(np.uint8), "RGB").save(os.path.join(dir_, "c0", f"img{i}.JPEG"), quality=90)


def photos(dir_):
    import glob
    os.makedirs(os.path.join(dir_, "c0"), exist_ok=True)
    for p in sorted(glob.glob("/usr/share/doc/opencv-doc/examples/data/*.jpg")):
        name = os.path.splitext(os.path.basename(p))[0]
        im = Image.open(p)
        if min(im.size) < 300 or im.mode not in ("RGB", "L") or name.startswith(("left", "right")):
            continue
        w, h = im.size
        s = 500 / max(w, h)
        im.convert("RGB").resize((round(w * s), round(h * s)), Image.BICUBIC).save(
            os.path.join(dir_, "c0", name + ".JPEG"), quality=90)


def rrc_box(w, h):  # torchvision RandomResizedCrop.get_params
    area = w * h
    for _ in range(10):
        target = area * random.uniform(0.08, 1.0)
        aspect = math.exp(random.uniform(math.log(3 / 4), math.log(4 / 3)))
        cw, ch = int(round(math.sqrt(target * aspect))), int(round(math.sqrt(target / aspect)))
        if 0 < cw <= w and 0 < ch <= h:
            return random.randint(0, w - cw), random.randint(0, h - ch), cw, ch
    return 0, 0, w, h


def train_transform(path):
    with open(path, "rb") as f:
        img = Image.open(f).convert("RGB")
    x, y, w, h = rrc_box(*img.size)
    img = img.crop((x, y, x + w, y + h)).resize((224, 224), Image.BICUBIC)
    if random.random() < 0.5:
        img = img.transpose(Image.FLIP_LEFT_RIGHT)
    t = np.asarray(img, dtype=np.float32).transpose(2, 0, 1) / 255.0
    return (t - MEAN) / STD


def main():
    dir_ = sys.argv[1]
    if "--make" in sys.argv:
        make(dir_)
    if "--photos" in sys.argv:
        photos(dir_)
    files = sorted(os.path.join(r, f) for r, _, fs in os.walk(dir_) for f in fs if f.lower().endswith((".jpeg", ".jpg", ".png")))
    for p in files[:32]:
        train_transform(p)  # warm-up
    n = 512
    start = time.process_time()  # CPU time: fair on a shared, loaded machine
    for i in range(n):
        train_transform(files[i % len(files)])
    s = time.process_time() - start
    print(f"Pillow {Image.__version__} + numpy, 1 core: {n / s:.1f} img/cpu-s over {len(files)} files")


if __name__ == "__main__":
    main()
