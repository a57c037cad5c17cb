"""Gradient checks on real CPU training loops: TR401, TR601, TR602, TR603."""

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn


def make(seed=0, dead=False):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    params = list(model.parameters())
    extra = nn.Linear(4, 4) if dead else None
    if extra is not None:
        params += list(extra.parameters())
    return model, torch.optim.SGD(params, lr=0.05), extra


def batches(n, size=16):
    g = torch.Generator().manual_seed(1)
    for _ in range(n):
        yield torch.randn(size, 8, generator=g), torch.randint(0, 2, (size,), generator=g)


def by_code(findings, code):
    return [f for f in findings if f.code == code]


# -- TR401 ---------------------------------------------------------------------------
def test_tr401_zero_grad_in_the_logging_branch(review):
    model, opt, _ = make()

    def train():
        for step, (x, y) in enumerate(batches(30)):
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            if step % 10 == 0:  # bug: only reset when logging
                opt.zero_grad()
                loss.item()

    found = by_code(review(train), "TR401")
    assert len(found) == 1
    f = found[0]
    assert f.detection == "runtime" and f.severity.label == "high"
    assert "carried over" in f.message and "of 29 steps" in f.message
    assert "opt.step()" in f.source_line


def test_tr401_silent_for_standard_loop_and_intended_accumulation(review, codes_of):
    model, opt, _ = make()

    def train():
        for x, y in batches(12):  # zero_grad / backward / step
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        opt.zero_grad()
        for i, (x, y) in enumerate(batches(24)):  # accumulate 4 micro-batches per step
            (nn.functional.cross_entropy(model(x), y) / 4).backward()
            if (i + 1) % 4 == 0:
                opt.step()
                opt.zero_grad(set_to_none=False)

    assert "TR401" not in codes_of(review(train))


def test_tr401_silent_when_grads_are_zeroed_through_data(review, codes_of):
    """``p.grad.data.zero_()`` leaves no trace in version counters: the one-off
    value check must recognise the reset instead of crying wolf."""
    model, opt, _ = make()

    def train():
        for x, y in batches(15):
            for p in model.parameters():
                if p.grad is not None:
                    p.grad.data.zero_()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

    assert "TR401" not in codes_of(review(train))


def test_tr401_silent_for_gan_style_alternating_optimizers(review, codes_of):
    torch.manual_seed(0)
    gen, disc = nn.Linear(4, 8), nn.Linear(8, 1)
    g_opt = torch.optim.Adam(gen.parameters(), lr=1e-3)
    d_opt = torch.optim.Adam(disc.parameters(), lr=1e-3)

    def train():
        for _ in range(12):
            real, z = torch.randn(8, 8), torch.randn(8, 4)
            d_opt.zero_grad()
            fake = gen(z)
            (disc(real).mean() - disc(fake.detach()).mean()).backward()
            d_opt.step()
            g_opt.zero_grad()
            (-disc(gen(z)).mean()).backward()  # also fills disc's grads
            g_opt.step()

    assert "TR401" not in codes_of(review(train))


# -- TR601 ---------------------------------------------------------------------------
def test_tr601_nan_gradients_with_first_step_and_names(review):
    model, opt, _ = make()

    def train():
        for step, (x, y) in enumerate(batches(25)):
            opt.zero_grad()
            if step == 13:
                x = x.clone()
                x[0, 0] = float("inf")  # one corrupt sample
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

    found = by_code(review(train), "TR601")
    assert len(found) == 1
    msg = found[0].message
    assert "first at step 14" in msg
    assert "0.weight" in msg and "2.weight" in msg
    assert "loss was first nan at step 14" in msg


def test_tr601_nan_loss_with_finite_gradients(review):
    model, opt, _ = make()

    def train():
        for step, (x, y) in enumerate(batches(20)):
            opt.zero_grad()
            if step == 7:
                y = torch.full_like(y, -100)  # every label ignored
            loss = nn.functional.cross_entropy(model(x), y, reduction="sum")
            loss = loss / (y != -100).sum()  # 0 / 0 on that batch
            loss.backward()
            opt.step()

    found = by_code(review(train), "TR601")
    assert len(found) == 1
    assert "first nan at step 8" in found[0].message
    assert "gradients stayed finite" in found[0].message


def test_tr601_silent_on_a_healthy_run(review, codes_of):
    model, opt, _ = make()

    def train():
        for x, y in batches(25):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

    found = review(train)
    assert not ({"TR601", "TR602", "TR603", "TR401"} & codes_of(found))


# -- TR602 ---------------------------------------------------------------------------
def test_tr602_gradient_norm_spike(review):
    model, opt, _ = make()

    def train():
        for step, (x, y) in enumerate(batches(40)):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            if step == 30:
                loss = loss * 1e4  # e.g. an outlier batch or a bad loss weight
            loss.backward()
            opt.step()

    found = by_code(review(train, check_every=8), "TR602")
    assert len(found) == 1
    assert "at step 31" in found[0].message


def test_tr602_silent_with_gradient_clipping(review, codes_of):
    model, opt, _ = make()

    def train():
        for step, (x, y) in enumerate(batches(40)):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            if step == 30:
                loss = loss * 1e4
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            opt.step()

    assert "TR602" not in codes_of(review(train, check_every=8))


# -- TR603 ---------------------------------------------------------------------------
class TwoHeads(nn.Module):
    def __init__(self, detach_body=False):
        super().__init__()
        self.body = nn.Linear(8, 16)
        self.head = nn.Linear(16, 2)
        self.unused_head = nn.Linear(16, 2)
        self.detach_body = detach_body

    def forward(self, x):
        h = torch.relu(self.body(x))
        if self.detach_body:
            h = h.detach()
        return self.head(h)


def test_tr603_parameters_that_never_get_a_gradient(review):
    net = TwoHeads(detach_body=True)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)

    def train():
        for x, y in batches(6):
            opt.zero_grad()
            nn.functional.cross_entropy(net(x), y).backward()
            opt.step()

    found = by_code(review(train), "TR603")
    assert len(found) == 1
    msg = found[0].message
    assert "4 parameters" in msg
    for name in ("body.weight", "body.bias", "unused_head.weight", "unused_head.bias"):
        assert name in msg
    assert "head.weight," not in msg.replace("unused_head.weight,", "")


def test_tr603_silent_for_frozen_parameters_and_full_models(review, codes_of):
    net = TwoHeads()
    for p in net.unused_head.parameters():
        p.requires_grad_(False)  # frozen on purpose: not TR603
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)

    def train():
        for x, y in batches(6):
            opt.zero_grad()
            nn.functional.cross_entropy(net(x), y).backward()
            opt.step()

    assert "TR603" not in codes_of(review(train))
