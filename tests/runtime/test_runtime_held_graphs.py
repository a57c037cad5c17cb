"""TR507 for graphs chained across steps with no model output in them
(an EMA copy updated with autograd on, a recurrent state never detached)."""

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn


class Averager:
    def __init__(self, model, decay=0.9):
        self.decay = decay
        self.shadow = {k: p.detach().clone() for k, p in model.named_parameters()}

    def update(self, model):
        for k, p in model.named_parameters():
            self.shadow[k] = self.shadow[k] * self.decay + p * (1 - self.decay)


class SafeAverager(Averager):
    @torch.no_grad()
    def update(self, model):
        super().update(model)


def fit(steps, after_step=lambda model: None):
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    state = {"model": model}
    for _ in range(steps):
        loss = nn.functional.cross_entropy(model(torch.randn(4, 8)), torch.randint(0, 2, (4,)))
        opt.zero_grad()
        loss.backward()
        opt.step()
        after_step(state)
    return state


def tr507(findings):
    return [f for f in findings if f.code == "TR507"]


def test_script_ema_list_updated_with_autograd_on_is_tr507_at_the_update_line(run_py):
    code, findings, report = run_py("""
        import torch
        import torch.nn as nn

        class Ema:
            def __init__(self, params):
                self.params = list(params)
                self.copies = [p.detach().clone() for p in self.params]

            def step(self):
                for i, p in enumerate(self.params):
                    self.copies[i] = self.copies[i].lerp(p, 0.01)

        model = nn.Linear(8, 2)
        ema = Ema(model.parameters())
        opt = torch.optim.Adam(model.parameters())
        for _ in range(20):
            model(torch.randn(4, 8)).pow(2).mean().backward()
            opt.step()
            opt.zero_grad()
            ema.step()
        """)
    assert code == 1
    [f] = [f for f in findings if f["code"] == "TR507"]
    assert f["line"] == 12 and "ema.copies[" in f["message"]


def test_ema_in_a_training_function_local(review):
    def train():
        model = nn.Linear(8, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        ema = Averager(model)
        for _ in range(20):
            model(torch.randn(4, 8)).pow(2).mean().backward()
            opt.step()
            opt.zero_grad()
            ema.update(model)

    assert len(tr507(review(train))) == 1


def test_running_statistic_of_a_parameter_never_detached(review):
    def train():
        model = nn.Linear(8, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        center = torch.zeros(8)
        for _ in range(20):
            loss = model(torch.randn(4, 8)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            center = 0.9 * center + 0.1 * model.weight.mean(0)  # bug: autograd on

    found = tr507(review(train))
    assert len(found) == 1
    assert "`center`" in found[0].message
    assert "center = 0.9 * center" in found[0].source_line


def test_near_misses_stay_silent(review):
    def no_grad_ema():
        model = nn.Linear(8, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        ema = SafeAverager(model)
        for _ in range(20):
            model(torch.randn(4, 8)).pow(2).mean().backward()
            opt.step()
            opt.zero_grad()
            ema.update(model)

    def detached_and_kept_loss_and_cached_value():
        model = nn.Linear(8, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        center = torch.zeros(8)
        scale = model.bias.sum() * 0  # computed once with autograd on, reused every step
        shift = scale  # noqa: F841 - another holder of the same old node
        last = None
        for _ in range(20):
            last = model(torch.randn(4, 8)).pow(2).mean()  # the last loss is kept: a fresh graph
            probe = scale + 1  # built from another holder's old value each step
            opt.zero_grad()
            last.backward()
            opt.step()
            center = 0.9 * center + 0.1 * model.weight.detach().mean(0)
        return last, probe

    assert tr507(review(no_grad_ema)) == []
    assert tr507(review(detached_and_kept_loss_and_cached_value)) == []
