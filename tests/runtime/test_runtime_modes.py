"""Train/eval mode and batch-norm checks: TR504, TR207, TR512, TR503."""

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402


def net(bn=True, dropout=True):
    layers = [nn.Linear(8, 16)]
    if bn:
        layers.append(nn.BatchNorm1d(16))
    layers.append(nn.ReLU())
    if dropout:
        layers.append(nn.Dropout(0.2))
    layers.append(nn.Linear(16, 2))
    return nn.Sequential(*layers)


def data(n=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return TensorDataset(torch.randn(n, 8, generator=g), torch.randint(0, 2, (n,), generator=g))


def train_epochs(model, opt, train, val, epochs=3, back_to_train=True, val_eval=True):
    for _ in range(epochs):
        if back_to_train:
            model.train()
        for x, y in train:
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        if val_eval:
            model.eval()
        with torch.no_grad():
            for x, _ in val:
                model(x)


def by_code(findings, code):
    return [f for f in findings if f.code == code]


# -- TR504 -----------------------------------------------------------------------------
def test_tr504_training_after_eval_without_train(review):
    model = net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train, val = DataLoader(data(), batch_size=16), DataLoader(data(32, 1), batch_size=16)

    found = by_code(review(lambda: train_epochs(model, opt, train, val, back_to_train=False)),
                    "TR504")
    assert len(found) == 1
    f = found[0]
    assert "8 optimizer steps" in f.message and "first: step 5" in f.message
    assert "`model` (Sequential)" in f.message
    assert "model(x)" in f.source_line


def test_tr504_silent_when_train_is_called_again(review, codes_of):
    model = net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train, val = DataLoader(data(), batch_size=16), DataLoader(data(32, 1), batch_size=16)
    found = review(lambda: train_epochs(model, opt, train, val))
    assert not ({"TR504", "TR207"} & codes_of(found))


def test_tr504_silent_for_a_frozen_feature_extractor_in_eval_mode(review, codes_of):
    """A frozen network in eval mode that gradients flow *through* (perceptual
    loss) is correct: its parameters are not trained."""
    extractor = net().eval()
    for p in extractor.parameters():
        p.requires_grad_(False)
    gen = nn.Linear(8, 8)
    opt = torch.optim.Adam(gen.parameters(), lr=1e-3)

    def train():
        for _ in range(6):
            opt.zero_grad()
            x = torch.randn(16, 8)
            (extractor(gen(x)) - extractor(x)).pow(2).mean().backward()
            opt.step()

    assert "TR504" not in codes_of(review(train))


def test_tr504_silent_for_frozen_batchnorm_fine_tuning(review, codes_of):
    model = net()
    model.train()
    model[1].eval()  # freeze BN statistics on purpose, dropout stays on
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def train():
        for x, y in DataLoader(data(), batch_size=16):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

    assert "TR504" not in codes_of(review(train))


# -- TR207 -----------------------------------------------------------------------------
def test_tr207_validation_under_no_grad_in_train_mode(review):
    model = net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train, val = DataLoader(data(), batch_size=16), DataLoader(data(32, 1), batch_size=16)

    found = by_code(review(lambda: train_epochs(model, opt, train, val, val_eval=False)),
                    "TR207")
    assert len(found) == 1
    assert "dropout active in 3" in found[0].message
    assert "6 times" in found[0].message  # 2 validation batches x 3 epochs


def test_tr207_silent_for_bn_recalibration_by_torch(review, codes_of):
    """swa_utils.update_bn runs train-mode forwards under no_grad on purpose."""
    from torch.optim.swa_utils import update_bn

    model = net(dropout=False)
    loader = DataLoader(data(), batch_size=16)
    assert "TR207" not in codes_of(review(lambda: update_bn(loader, model)))


# -- TR512 / TR503 -----------------------------------------------------------------------
def conv_net():
    return nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                         nn.Linear(4 * 6 * 6, 2))


def images(n):
    return TensorDataset(torch.randn(n, 1, 8, 8), torch.randint(0, 2, (n,)))


def fit(model, loader, epochs=1):
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(epochs):
        for x, y in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()


def test_tr512_batchnorm_trained_with_batch_of_one(review):
    model = conv_net()
    found = by_code(review(lambda: fit(model, DataLoader(images(6), batch_size=1))), "TR512")
    assert len(found) == 1
    assert "`1`" in found[0].message and "6 steps" in found[0].message


def test_tr503_short_last_batch_reaches_batchnorm(review):
    model = conv_net()
    loader = DataLoader(images(70), batch_size=32, shuffle=True)
    found = review(lambda: fit(model, loader, epochs=2))
    tr503 = by_code(found, "TR503")
    assert len(tr503) == 1
    msg = tr503[0].message
    assert "short last batch of 6" in msg and "full batches: 32" in msg
    assert "1 more epoch" in msg
    assert "for x, y in loader" in tr503[0].source_line
    assert not by_code(found, "TR512")


def test_tr503_tr512_silent_with_drop_last_or_without_batchnorm(review, codes_of):
    model = conv_net()
    loader = DataLoader(images(70), batch_size=32, shuffle=True, drop_last=True)
    assert not ({"TR503", "TR512"} & codes_of(review(lambda: fit(model, loader, 2))))
    plain = nn.Sequential(nn.Flatten(), nn.Linear(64, 2))
    loader = DataLoader(images(70), batch_size=32)
    assert not ({"TR503", "TR512"} & codes_of(review(lambda: fit(plain, loader, 2))))


def test_tr512_explains_the_batchnorm1d_crash(run_py):
    code, findings, _ = run_py("""
        import torch, torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset
        torch.set_num_threads(1)
        model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        data = TensorDataset(torch.randn(9, 4), torch.randint(0, 2, (9,)))
        for x, y in DataLoader(data, batch_size=4):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    """)
    assert code == 1  # the script's own ValueError
    tr503 = [f for f in findings if f["code"] == "TR503"]
    assert tr503 and "short last batch of 1" in tr503[0]["message"]
