"""A line plot written as PNG with numpy and zlib only, for the training
examples where matplotlib is not installed: axes with tick labels, one
polyline per series (dashed and lighter when its label contains
"attnfuse"), a title and a legend, in a 5x7 bitmap font drawn here.

    line_plot("loss.png", {"kv torch": [...], "kv attnfuse": [...]},
              title="training loss")
"""

import struct
import zlib

import numpy as np

# 5x7 glyphs, rows top to bottom, '#' = ink.
_GLYPHS = {
    " ": ".....|.....|.....|.....|.....|.....|.....",
    "0": ".###.|#...#|#..##|#.#.#|##..#|#...#|.###.",
    "1": "..#..|.##..|..#..|..#..|..#..|..#..|.###.",
    "2": ".###.|#...#|....#|...#.|..#..|.#...|#####",
    "3": "####.|....#|....#|.###.|....#|....#|####.",
    "4": "...#.|..##.|.#.#.|#..#.|#####|...#.|...#.",
    "5": "#####|#....|####.|....#|....#|#...#|.###.",
    "6": "..##.|.#...|#....|####.|#...#|#...#|.###.",
    "7": "#####|....#|...#.|..#..|.#...|.#...|.#...",
    "8": ".###.|#...#|#...#|.###.|#...#|#...#|.###.",
    "9": ".###.|#...#|#...#|.####|....#|...#.|.##..",
    "a": ".....|.....|.###.|....#|.####|#...#|.####",
    "b": "#....|#....|####.|#...#|#...#|#...#|####.",
    "c": ".....|.....|.###.|#....|#....|#...#|.###.",
    "d": "....#|....#|.####|#...#|#...#|#...#|.####",
    "e": ".....|.....|.###.|#...#|#####|#....|.###.",
    "f": "..##.|.#..#|.#...|###..|.#...|.#...|.#...",
    "g": ".....|.####|#...#|.####|....#|#...#|.###.",
    "h": "#....|#....|#.##.|##..#|#...#|#...#|#...#",
    "i": "..#..|.....|.##..|..#..|..#..|..#..|.###.",
    "j": "...#.|.....|..##.|...#.|...#.|#..#.|.##..",
    "k": "#....|#....|#..#.|#.#..|##...|#.#..|#..#.",
    "l": ".##..|..#..|..#..|..#..|..#..|..#..|.###.",
    "m": ".....|.....|##.#.|#.#.#|#.#.#|#...#|#...#",
    "n": ".....|.....|#.##.|##..#|#...#|#...#|#...#",
    "o": ".....|.....|.###.|#...#|#...#|#...#|.###.",
    "p": ".....|.....|####.|#...#|####.|#....|#....",
    "q": ".....|.....|.####|#...#|.####|....#|....#",
    "r": ".....|.....|#.##.|##..#|#....|#....|#....",
    "s": ".....|.....|.###.|#....|.###.|....#|####.",
    "t": ".#...|.#...|###..|.#...|.#...|.#..#|..##.",
    "u": ".....|.....|#...#|#...#|#...#|#..##|.##.#",
    "v": ".....|.....|#...#|#...#|#...#|.#.#.|..#..",
    "w": ".....|.....|#...#|#...#|#.#.#|#.#.#|.#.#.",
    "x": ".....|.....|#...#|.#.#.|..#..|.#.#.|#...#",
    "y": ".....|.....|#...#|#...#|.####|....#|.###.",
    "z": ".....|.....|#####|...#.|..#..|.#...|#####",
    "A": ".###.|#...#|#...#|#####|#...#|#...#|#...#",
    "B": "####.|#...#|#...#|####.|#...#|#...#|####.",
    "C": ".###.|#...#|#....|#....|#....|#...#|.###.",
    "D": "###..|#..#.|#...#|#...#|#...#|#..#.|###..",
    "E": "#####|#....|#....|####.|#....|#....|#####",
    "F": "#####|#....|#....|####.|#....|#....|#....",
    "G": ".###.|#...#|#....|#.###|#...#|#...#|.####",
    "H": "#...#|#...#|#...#|#####|#...#|#...#|#...#",
    "I": ".###.|..#..|..#..|..#..|..#..|..#..|.###.",
    "J": "..###|...#.|...#.|...#.|...#.|#..#.|.##..",
    "K": "#...#|#..#.|#.#..|##...|#.#..|#..#.|#...#",
    "L": "#....|#....|#....|#....|#....|#....|#####",
    "M": "#...#|##.##|#.#.#|#.#.#|#...#|#...#|#...#",
    "N": "#...#|#...#|##..#|#.#.#|#..##|#...#|#...#",
    "O": ".###.|#...#|#...#|#...#|#...#|#...#|.###.",
    "P": "####.|#...#|#...#|####.|#....|#....|#....",
    "Q": ".###.|#...#|#...#|#...#|#.#.#|#..#.|.##.#",
    "R": "####.|#...#|#...#|####.|#.#..|#..#.|#...#",
    "S": ".####|#....|#....|.###.|....#|....#|####.",
    "T": "#####|..#..|..#..|..#..|..#..|..#..|..#..",
    "U": "#...#|#...#|#...#|#...#|#...#|#...#|.###.",
    "V": "#...#|#...#|#...#|#...#|#...#|.#.#.|..#..",
    "W": "#...#|#...#|#...#|#.#.#|#.#.#|#.#.#|.#.#.",
    "X": "#...#|#...#|.#.#.|..#..|.#.#.|#...#|#...#",
    "Y": "#...#|#...#|.#.#.|..#..|..#..|..#..|..#..",
    "Z": "#####|....#|...#.|..#..|.#...|#....|#####",
    ".": ".....|.....|.....|.....|.....|.##..|.##..",
    ",": ".....|.....|.....|.....|.##..|..#..|.#...",
    ":": ".....|.##..|.##..|.....|.##..|.##..|.....",
    "-": ".....|.....|.....|#####|.....|.....|.....",
    "+": ".....|..#..|..#..|#####|..#..|..#..|.....",
    "=": ".....|.....|#####|.....|#####|.....|.....",
    "_": ".....|.....|.....|.....|.....|.....|#####",
    "(": "...#.|..#..|.#...|.#...|.#...|..#..|...#.",
    ")": ".#...|..#..|...#.|...#.|...#.|..#..|.#...",
    "/": ".....|....#|...#.|..#..|.#...|#....|.....",
    "%": "##...|##..#|...#.|..#..|.#...|#..##|...##",
    "'": ".##..|..#..|.#...|.....|.....|.....|.....",
    "?": ".###.|#...#|....#|...#.|..#..|.....|..#..",
}
_FONT = {c: np.array([[ch == "#" for ch in row] for row in g.split("|")])
         for c, g in _GLYPHS.items()}

COLORS = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40),
          (148, 103, 189), (140, 86, 75), (227, 119, 194), (127, 127, 127),
          (188, 189, 34), (23, 190, 207)]


def _text(img, x, y, text, color=(0, 0, 0), scale=1):
    """Draws `text` with its top-left corner at (x, y)."""
    for i, ch in enumerate(text):
        glyph = _FONT.get(ch, _FONT["?"])
        if scale > 1:
            glyph = glyph.repeat(scale, 0).repeat(scale, 1)
        gx = x + i * 6 * scale
        h, w = glyph.shape
        if gx < 0 or y < 0 or gx + w > img.shape[1] or y + h > img.shape[0]:
            continue
        img[y:y + h, gx:gx + w][glyph] = color


def _line(img, x0, y0, x1, y1, color, width=1, dash=None, phase=0.0,
          clip=None):
    """Draws a segment; dash=(on, off) in pixels along the line, clip=(x0,
    y0, x1, y1) the box it may draw in. Returns the distance travelled, for
    continuing a dash pattern."""
    length = max(abs(x1 - x0), abs(y1 - y0), 1)
    steps = int(np.ceil(length)) + 1
    t = np.linspace(0.0, 1.0, steps)
    xs = np.round(x0 + (x1 - x0) * t).astype(int)
    ys = np.round(y0 + (y1 - y0) * t).astype(int)
    keep = np.ones(steps, bool)
    if dash:
        travelled = phase + t * np.hypot(x1 - x0, y1 - y0)
        keep = (travelled % (dash[0] + dash[1])) < dash[0]
    for dx in range(width):
        for dy in range(width):
            px, py = xs[keep] + dx - width // 2, ys[keep] + dy - width // 2
            bx0, by0, bx1, by1 = clip or (0, 0, img.shape[1] - 1,
                                          img.shape[0] - 1)
            ok = (px >= bx0) & (px <= bx1) & (py >= by0) & (py <= by1)
            img[py[ok], px[ok]] = color
    return phase + np.hypot(x1 - x0, y1 - y0)


def _ticks(lo, hi, count=6):
    span = hi - lo if hi > lo else 1.0
    raw = span / count
    magnitude = 10 ** np.floor(np.log10(raw))
    step = min((m * magnitude for m in (1, 2, 2.5, 5, 10)
                if m * magnitude >= raw), default=10 * magnitude)
    first = int(np.ceil(lo / step))
    ticks = []
    while first * step <= hi + 1e-12 * span:
        ticks.append(first * step)
        first += 1
    return ticks


def _label(v):
    return f"{v:.4g}".replace("-0", "0") if abs(v) < 1e-12 else f"{v:.4g}"


def write_png(path, img):
    """img: [H, W, 3] uint8 -> an 8-bit RGB PNG file."""
    h, w, _ = img.shape
    raw = b"".join(b"\x00" + img[row].tobytes() for row in range(h))

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + \
            struct.pack(">I", zlib.crc32(body) & 0xffffffff)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(raw, 9)))
        f.write(chunk(b"IEND", b""))


def line_plot(path, series, title="", xlabel="step", ylabel="",
              width=900, height=560, ylim=None):
    """Plots {label: [y per step]} into the PNG at `path`, the y axis over
    ylim=(low, high) (default: every value; lines are clipped to it). Series
    whose labels share their first word share a colour; labels containing
    "attnfuse" are dashed, in a lighter shade."""
    img = np.full((height, width, 3), 255, np.uint8)
    left, right, top, bottom = 70, 190, 40, 50
    pw, ph = width - left - right, height - top - bottom
    values = [v for ys in series.values() for v in ys
              if v is not None and np.isfinite(v)]
    if ylim is None:
        lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
        pad = 0.03 * (hi - lo if hi > lo else 1.0)
        lo, hi = lo - pad, hi + pad
    else:
        lo, hi = ylim
    n = max((len(ys) for ys in series.values()), default=1)

    def px(i):
        return left + pw * i / max(n - 1, 1)

    def py(v):
        return top + ph * (hi - v) / (hi - lo)

    grey, black = (225, 225, 225), (0, 0, 0)
    for v in _ticks(lo, hi):
        y = int(round(py(v)))
        _line(img, left, y, left + pw, y, grey)
        label = _label(v)
        _text(img, left - 6 - 6 * len(label), y - 3, label)
    for v in _ticks(0, n - 1):
        x = int(round(px(v)))
        _line(img, x, top, x, top + ph, grey)
        label = _label(v)
        _text(img, x - 3 * len(label), top + ph + 6, label)
    _line(img, left, top, left, top + ph, black)
    _line(img, left, top + ph, left + pw, top + ph, black)
    _line(img, left, top, left + pw, top, black)
    _line(img, left + pw, top, left + pw, top + ph, black)
    _text(img, left + pw // 2 - 3 * len(xlabel), top + ph + 22, xlabel)
    _text(img, 6, top - 11, ylabel)
    _text(img, left + pw // 2 - 6 * len(title), 6, title, scale=2)

    groups = []
    for label in series:
        key = label.split()[0]
        if key not in groups:
            groups.append(key)
    for index, (label, ys) in enumerate(series.items()):
        color = COLORS[groups.index(label.split()[0]) % len(COLORS)]
        dash = None
        if "attnfuse" in label:  # lighter and dashed: visible on top of
            dash = (6, 4)        # a solid line of the same series
            color = tuple((c + 255) // 2 for c in color)
        phase = 0.0
        points = [(px(i), py(v)) for i, v in enumerate(ys)
                  if v is not None and np.isfinite(v)]
        for (x0, y0), (x1, y1) in zip(points, points[1:]):
            phase = _line(img, x0, y0, x1, y1, color, width=2, dash=dash,
                          phase=phase, clip=(left, top, left + pw, top + ph))
        ly = top + 8 + 14 * index
        _line(img, left + pw + 12, ly + 3, left + pw + 36, ly + 3, color,
              width=2, dash=dash)
        _text(img, left + pw + 42, ly, label[:24])
    write_png(path, img)
