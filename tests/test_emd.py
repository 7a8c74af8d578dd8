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


def test_identity_symmetry_and_dense_reference():
    rng = np.random.default_rng(1)
    a, b = rng.random((7, 8, 3)), rng.random((8, 6, 3))
    assert epslap.emd(a, a).distance == 0.0
    ab, ba = epslap.emd(a, b), epslap.emd(b, a)
    assert ab.cost == pytest.approx(ba.cost, rel=1e-12)
    # the same problem solved densely by scipy
    fa = costfns.pixel_features(costfns.load_image(a))
    fb = costfns.pixel_features(costfns.load_image(b))
    c = ((fa[:, None, :] - fb[None, :, :]) ** 2).sum(-1)
    r, k = scipy_lsa(c if len(fa) <= len(fb) else c.T)
    ref = (c if len(fa) <= len(fb) else c.T)[r, k].sum()
    assert ab.cost == pytest.approx(ref, rel=1e-10)
    # the pixel assignment is a valid matching of the smaller image's pixels
    assert len(np.unique(ab.pixels_a)) == len(ab.pixels_a) == min(56, 48)
    np.testing.assert_allclose(((fa[ab.pixels_a] - fb[ab.pixels_b]) ** 2).sum(), ab.cost)


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
    with pytest.raises(ValueError, match="cannot read"):
        costfns.load_image(str(bad))
    with pytest.raises(ValueError, match="not found"):
        costfns.load_image(str(tmp_path / "missing.png"))
    with pytest.raises(ValueError, match="empty"):
        costfns.load_image(np.zeros((0, 5, 3)))
    with pytest.raises(ValueError, match="colour must be"):
        costfns.pixel_features(gradient(), colour="hsv")


def test_matrix_resumes_and_cli(tmp_path, capsys):
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
    xy = classical_mds(d2)
    assert xy.shape == (4, 2)
    plot, pair = tmp_path / "mds.png", tmp_path / "pair.png"
    assert main(["emd", *paths, "--out", str(out), "--plot", str(plot),
                 "--assignment", str(pair)]) == 0
    assert plot.stat().st_size > 1000 and pair.stat().st_size > 1000
    assert "i0.png" in capsys.readouterr().out
    assert main(["emd", paths[0]]) == 2
