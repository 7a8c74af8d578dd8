"""Image EMD on small synthetic images made here (gradients, shapes, noise)."""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from scipy.optimize import linear_sum_assignment as scipy_lsa

import costfns
import epslap
from epslap.cli import main
from epslap.emd import classical_mds


def gradient(h=12, w=14, shift=0.0):
    y, x = np.mgrid[0:h, 0:w]
    return np.stack([x / (w - 1), y / (h - 1), np.full((h, w), 0.5 + shift)], axis=-1).clip(0, 1)


def square(h=12, w=14, at=(2, 3), colour=(1.0, 0.2, 0.2)):
    img = np.zeros((h, w, 3))
    img[at[0]:at[0] + 5, at[1]:at[1] + 5] = colour
    return img


def save(tmp_path, name, arr, mode=None):
    data = (np.asarray(arr) * 255 + 0.5).astype(np.uint8)
    path = tmp_path / name
    Image.fromarray(data, mode=mode).save(path)
    return str(path)


def pot_emd(img_a, img_b, metric):
    """POT's balanced EMD of two images (uniform weights), from the same features."""
    ot = pytest.importorskip("ot")
    fa, fb = costfns.pixel_features(img_a), costfns.pixel_features(img_b)
    m = ot.dist(fa, fb, metric=metric)
    wa, wb = np.full(len(fa), 1.0 / len(fa)), np.full(len(fb), 1.0 / len(fb))
    return ot.emd2(wa, wb, m, numItermax=10**7)


RNG = np.random.default_rng(7)
PAIRS = {  # name: (image a, image b, size)
    "8x8 and 8x8": (RNG.random((8, 8, 3)), RNG.random((8, 8, 3)), None),
    "8x8 and 10x6": (RNG.random((8, 8, 3)), RNG.random((10, 6, 3)), None),
    "8x8 and 10x6, size=40": (RNG.random((8, 8, 3)), RNG.random((10, 6, 3)), 40),
    "12x14 and 9x9, size=48": (gradient(12, 14), square(9, 9, at=(1, 1)), 48),
}


@pytest.mark.parametrize("metric", ["euclidean", "sqeuclidean"])
@pytest.mark.parametrize("pair", list(PAIRS))
def test_balanced_emd_equals_pot(pair, metric):
    a, b, size = PAIRS[pair]
    r = epslap.emd(a, b, size=size, metric=metric)
    ia, ib = costfns.load_image_pair(a, b, size=size)
    assert ia.shape[:2] == ib.shape[:2] == r.shape_a[:2] == r.shape_b[:2]  # one grid
    n = ia.shape[0] * ia.shape[1]
    assert n <= min(a.shape[0] * a.shape[1], b.shape[0] * b.shape[1], size or n)
    assert sorted(r.pixels_a) == sorted(r.pixels_b) == list(range(n))  # every pixel matched
    assert r.distance == pytest.approx(pot_emd(ia, ib, metric), rel=1e-9)
    assert r.metric == metric and r.quantity == ("W1" if metric == "euclidean" else "W2^2")
    assert r.true_distance == pytest.approx(r.distance if metric == "euclidean"
                                            else np.sqrt(r.distance))


def test_equal_pixel_counts_are_not_resampled():
    a, b = RNG.random((8, 10, 3)), RNG.random((10, 8, 3))  # 80 pixels each, other shapes
    ia, ib = costfns.load_image_pair(a, b)
    np.testing.assert_array_equal(ia, a)
    np.testing.assert_array_equal(ib, b)
    assert epslap.emd(a, b).distance == pytest.approx(pot_emd(a, b, "euclidean"), rel=1e-9)
    # the grid's aspect (w / h) is the geometric mean of the images' aspects, h * w <= pixels
    assert costfns.images.common_grid((100, 200), (200, 100), 5000) == (71, 70)
    assert costfns.images.common_grid((100, 100), (100, 400), 10000) == (71, 140)


def test_identity_symmetry_and_partial_matching_on_request():
    rng = np.random.default_rng(1)
    a, b = rng.random((7, 8, 3)), rng.random((8, 6, 3))
    assert epslap.emd(a, a).distance == 0.0
    ab, ba = epslap.emd(a, b), epslap.emd(b, a)
    assert ab.cost == pytest.approx(ba.cost, rel=1e-12)
    # unmatched="drop": the smaller image's 48 pixels matched into the larger's 56 (scipy)
    for metric in ("euclidean", "sqeuclidean"):
        part = epslap.emd(a, b, unmatched="drop", metric=metric)
        fa = costfns.pixel_features(costfns.load_image(a))
        fb = costfns.pixel_features(costfns.load_image(b))
        c = ((fa[:, None, :] - fb[None, :, :]) ** 2).sum(-1)
        c = c if metric == "sqeuclidean" else np.sqrt(c)
        r, k = scipy_lsa(c.T)
        assert part.cost == pytest.approx(c.T[r, k].sum(), rel=1e-10)
        assert len(np.unique(part.pixels_a)) == len(part.pixels_a) == 48
        assert part.unmatched == "drop" and part.distance == pytest.approx(part.cost / 48)
        d = ((fa[part.pixels_a] - fb[part.pixels_b]) ** 2).sum(-1)
        np.testing.assert_allclose((d if metric == "sqeuclidean" else np.sqrt(d)).sum(),
                                   part.cost)


def test_bad_options():
    a = gradient()
    with pytest.raises(ValueError, match="metric must be"):
        epslap.emd(a, a, metric="cosine")
    with pytest.raises(ValueError, match="unmatched must be"):
        epslap.emd(a, a, unmatched="keep")
    for size in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="size must be a positive pixel count"):
            epslap.emd(a, a, size=size)


def test_euclidean_source_rows_entries_and_transpose():
    rng = np.random.default_rng(4)
    x, y = rng.random((9, 5)), rng.random((13, 5))
    src = costfns.Euclidean(x, y)
    ref = np.sqrt(((x[:, None, :] - y[None, :, :]) ** 2).sum(-1))
    np.testing.assert_allclose(src.dense(), ref, rtol=1e-15)
    np.testing.assert_array_equal(src.row(3), src.dense()[3])
    np.testing.assert_array_equal(src.T.dense(), src.dense().T)
    sol = epslap.solve(src)
    r, k = scipy_lsa(ref)
    assert sol.cost == pytest.approx(ref[r, k].sum(), rel=1e-12)
    with pytest.raises(ValueError, match="Euclidean: X and Y"):
        costfns.Euclidean(x, y[:, :2])


def test_distance_ordering_translation_and_recolouring():
    base = square()
    near = square(at=(2, 4))                      # moved by one pixel
    far = square(at=(6, 8))                       # moved further
    recoloured = square(colour=(0.2, 0.2, 1.0))   # same place, other colour
    d_near = epslap.emd(base, near).distance
    d_far = epslap.emd(base, far).distance
    d_col = epslap.emd(base, recoloured).distance
    assert 0 < d_near < d_far
    assert d_col > d_near
    # weighing position more makes the moved square farther, colour changes no closer
    heavy = epslap.emd(base, far, position_weight=10.0).distance
    assert heavy > d_far


def test_lab_colour_and_downscaling():
    img = gradient(40, 50)
    small = costfns.load_image(img, size=500)
    assert small.shape[0] * small.shape[1] <= 520 and small.shape[2] == 3
    assert epslap.emd(img, gradient(40, 50, 0.3), colour="lab", size=300).distance > 0


def test_loading_modes_and_errors(tmp_path):
    g = save(tmp_path, "g.png", gradient()[:, :, 0], mode="L")
    assert costfns.load_image(g).shape == (12, 14, 3)
    rgba = np.dstack([square(), np.zeros((12, 14))])  # fully transparent: white
    p = save(tmp_path, "t.png", rgba, mode="RGBA")
    np.testing.assert_allclose(costfns.load_image(p), 1.0)
    ppm = tmp_path / "x.ppm"
    Image.fromarray((gradient() * 255).astype(np.uint8)).save(ppm)
    assert costfns.load_image(str(ppm)).shape == (12, 14, 3)
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not an image")
    with pytest.raises(costfns.ImageReadError, match="cannot read"):
        costfns.load_image(str(bad))
    with pytest.raises(costfns.ImageReadError, match="not found"):
        costfns.load_image(str(tmp_path / "missing.png"))
    with pytest.raises(ValueError, match="empty"):
        costfns.load_image(np.zeros((0, 5, 3)))
    with pytest.raises(ValueError, match="colour must be"):
        costfns.pixel_features(gradient(), colour="hsv")


def test_matrix_resumes_only_with_the_same_settings(tmp_path):
    paths = [save(tmp_path, f"i{k}.png", img) for k, img in
             enumerate([square(), square(at=(2, 4)), gradient(), square(colour=(0.1, 0.9, 0.1))])]
    out = tmp_path / "d.csv"
    d1 = epslap.emd_matrix(paths[:3], out=str(out), progress=False)
    assert out.read_text().count("\n") == 1 + 3
    d2 = epslap.emd_matrix(paths, out=str(out), progress=False)  # resumes: 3 done, 3 new
    assert out.read_text().count("\n") == 1 + 6
    np.testing.assert_allclose(d2[:3, :3], d1)
    d3 = epslap.emd_matrix(paths[::-1], out=str(out), progress=False)  # any order: nothing new
    assert out.read_text().count("\n") == 1 + 6
    np.testing.assert_allclose(d3, d2[::-1, ::-1])
    assert np.allclose(d2, d2.T) and np.all(np.diag(d2) == 0)
    assert classical_mds(d2).shape == (4, 2)
    sq = epslap.emd_matrix(paths, out=str(out), progress=False, metric="sqeuclidean")
    assert out.read_text().count("\n") == 1 + 12  # W2² values are not W1 values: solved anew
    assert not np.allclose(sq, d2)
    old = tmp_path / "old.csv"
    old.write_text("a,b,distance,seconds\n")
    with pytest.raises(ValueError, match="older epslap"):
        epslap.emd_matrix(paths, out=str(old), progress=False)


def test_cli_solves_each_pair_once_and_plots_true_distances(tmp_path, monkeypatch, capsys):
    import importlib
    module = importlib.import_module("epslap.emd")
    solved, embedded = [], []
    real_emd, real_mds = module.emd, module.classical_mds

    def counting_emd(a, b, **kw):
        solved.append((a, b))
        return real_emd(a, b, **kw)

    def recording_mds(dist, dims=2):
        embedded.append(np.array(dist))
        return real_mds(dist, dims)
    monkeypatch.setattr(module, "emd", counting_emd)
    monkeypatch.setattr(module, "classical_mds", recording_mds)
    paths = [save(tmp_path, f"i{k}.png", img) for k, img in
             enumerate([square(), square(at=(2, 4)), gradient()])]
    out, plot, pair = tmp_path / "d.csv", tmp_path / "mds.png", tmp_path / "pair.png"
    argv = ["emd", *paths, "--metric", "sqeuclidean", "--out", str(out), "--plot", str(plot),
            "--assignment", str(pair), "--no-progress"]
    assert main(argv) == 0
    assert len(solved) == 3  # the first pair's matching is kept for --assignment
    assert plot.stat().st_size > 1000 and pair.stat().st_size > 1000
    text = capsys.readouterr().out
    assert "i0.png" in text and "W2²" in text
    dist = epslap.emd_matrix(paths, out=str(out), progress=False, metric="sqeuclidean")
    np.testing.assert_allclose(embedded[0], np.sqrt(dist))  # W2 = √(W2²) into the MDS
    solved.clear()
    assert main(argv) == 0  # resumed: only the pair drawn is solved, once
    assert len(solved) == 1


def test_cli_emd_errors(tmp_path, capsys):
    a = save(tmp_path, "a.png", square())
    b = save(tmp_path, "b.png", gradient())
    old = tmp_path / "old.csv"
    old.write_text("a,b,distance,seconds\n")
    assert main(["emd", a, b, "--out", str(old), "--no-progress"]) == 2
    assert "older epslap" in capsys.readouterr().err
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not an image")
    assert main(["emd", a, str(bad)]) == 1
    err = capsys.readouterr().err
    assert "cannot read" in err and len(err.splitlines()) == 1
    assert main(["emd", a]) == 2


def test_image_files_read_as_their_arrays_at_every_depth(tmp_path):
    """A 16-bit file scales by 65535 as a uint16 array does (it was scaled by its own largest
    value: a dark picture became bright), and a float TIFF keeps its samples (they were
    truncated to 8 bits: nearly black); NaN or infinite position weights are refused by name."""
    g8 = (np.arange(256).reshape(16, 16) // 2).astype(np.uint8)
    Image.fromarray(g8).save(tmp_path / "dark8.png")
    Image.fromarray(g8.astype(np.uint16) * 257).save(tmp_path / "dark16.png")
    np.testing.assert_allclose(costfns.load_image(tmp_path / "dark16.png"),
                               costfns.load_image(g8), atol=1e-12)
    assert epslap.emd(tmp_path / "dark8.png", tmp_path / "dark16.png").distance == 0.0
    ramp = np.linspace(0, 1, 256, dtype=np.float32).reshape(16, 16)
    Image.fromarray(ramp).save(tmp_path / "ramp.tif")
    np.testing.assert_allclose(costfns.load_image(tmp_path / "ramp.tif"),
                               costfns.load_image(ramp), atol=1e-7)
    for bad in (np.nan, np.inf, -1.0):
        with pytest.raises(ValueError, match="position_weight must be a finite number >= 0"):
            epslap.emd(g8, g8, position_weight=bad)
