"""Control and value facts on top of the semantic model, composed by concept.

A composition root: each concept is a small class under ``engine/model/`` that
owns its state and receives the concepts it asks in its constructor
(docs/WRITING_RULES.md, "Where the model lives"): the call graph
(``CallGraph``), grad contexts (``GradContexts``), values (``Values``), data
splits (``Splits``), loops and their events (``Loops``), train/eval modes
(``Modes``) and placement (``Placement``). ``Flow`` builds them in that order
and answers the public API (``ctx.flow.*``) through them.

A *training loop* is the innermost loop whose iteration runs a backward pass and
an optimizer step (directly, in nested blocks, or through functions of the same
module). Its *events* (zero_grad, backward, step, clip, ...) are kept in source
order with the conditions they run under, so ordering rules read them instead
of re-walking the tree.
"""

from __future__ import annotations

from typing import Callable

from torchreview.engine.flow_common import Event, TrainingLoop  # noqa: F401  (re-exported)
from torchreview.engine.model.calls import CallGraph
from torchreview.engine.model.grad import GradContexts
from torchreview.engine.model.loops import Loops
from torchreview.engine.model.modes import Modes
from torchreview.engine.model.placement import Placement
from torchreview.engine.model.splits import Splits
from torchreview.engine.model.values import Values
from torchreview.engine.semantic import SemanticModel


class Flow:
    """``external_param_kind``: the kind callers in other project files pass for a
    parameter (the context's ``call_paths``), asked by ``Loops.classify``;
    ``called_only_here(func)``: no other project file can call the function (the
    context's answer: a notebook's, or one no other file names), so its same-module call
    sites are all of them (``Loops`` reads a flag every call leaves falsy as off);
    ``external_param_split``: the split callers in other project files pass for a
    parameter (the context's ``call_paths``), asked by ``Splits``, as is
    ``external_returned_split`` (how an element a project function of another module
    returns is built)."""

    def __init__(self, model: SemanticModel, *, external_param_kind: Callable | None = None,
                 configured: Callable | None = None, called_only_here: Callable | None = None,
                 external_param_split: Callable | None = None,
                 external_returned_split: Callable | None = None) -> None:
        self.m = model
        # ---- the concepts, each built from the ones before it
        calls = self.call_graph = CallGraph(model)
        grad = self.grad = GradContexts(qualname=model.qualname, call_sites=calls.call_sites)
        values = self.values = Values(model, calls=calls)
        self.splits = Splits(model, reaching_value=values.reaching_value, values_of=values.values_of,
                             resolve_local_call=calls.resolve_local_call, arguments_for=values.arguments_for,
                             configured=configured, external_split=external_param_split,
                             external_returned=external_returned_split)
        loops = self.loops = Loops(model, calls=calls, values=values, grad=grad,
                                   external_param_kind=external_param_kind, called_only_here=called_only_here)
        modes = self.modes = Modes(model, calls=calls, loops=loops, values=values)
        placement = self.placement = Placement(model, values=values)
        # ---- the public API (ctx.flow.*), answered by the concepts; bound once
        # the call graph and import time
        self.call_sites, self.resolve_local_call = calls.call_sites, calls.resolve_local_call
        self.imported_mode_calls, self.imported_mode = calls.imported_mode_calls, calls.imported_mode
        self.is_main_guard, self.runs_at_import = calls.is_main_guard, calls.runs_at_import
        self.run_by_base_class = calls.run_by_base_class
        # grad contexts
        self.grad_disabled, self.function_grad_disabled = grad.grad_disabled, grad.function_grad_disabled
        self.disables_grad, self.disables_grad_expr = grad.disables_grad, grad.disables_grad_expr
        # values
        self.values_of, self.arguments_for = values.values_of, values.arguments_for
        self.parameter_constant, self.fixed_test = values.parameter_constant, values.fixed_test
        self.reaching_value, self.reaching_value_strict = values.reaching_value, values.reaching_value_strict
        self.branch_values = values.reaching_values
        self.random_numbers = values.random_numbers
        self.origin, self.module_constructor = values.origin, values.module_constructor
        self.activation_of, self.loss_call, self.known_tensor = values.activation_of, values.loss_call, \
            values.known_tensor
        self.builds_loss_modules = values.builds_loss_modules
        self.iterated_loaders, self.dataset_in_memory = values.iterated_loaders, values.dataset_in_memory
        self.random_dataset, self.loaders_of = values.random_dataset, values.loaders_of
        self.wrapping_call, self.discarded = values.wrapping_call, values.discarded
        self.unpacked_from = values.unpacked_from
        # data splits
        self.data_split, self.metric_split = self.splits.data_split, self.splits.metric_split
        self.holds_validation_data = lambda: self.splits.holds_validation_data
        # loops and their events
        self.classify, self.events_in = loops.classify, loops.events_in
        self.training_loop_of, self.in_forward_path = loops.training_loop_of, loops.in_forward_path
        self.is_training_loader, self.iterables_of = loops.is_training_loader, loops.iterables_of
        self.is_batch_loop, self.is_epoch_loop = loops.is_batch_loop, loops.is_epoch_loop
        self.runs_once = loops.runs_once
        self.repeating_loop, self.raw_batch_names = loops.repeating_loop, loops.raw_batch_names
        self.after_training = loops.after_training
        # modes
        self.is_model_call, self.mode_calls_before = modes.is_model_call, modes.mode_calls_before
        self.called_model, self.eval_reaches, self.mode_at = modes.called_model, modes.eval_reaches, \
            modes.mode_at
        self.own_mode, self.sets_mode_before = modes.own_mode, modes.sets_mode_before
        self.param_mode_calls = modes.param_mode_calls
        self.shared_forward_helper = modes.shared_forward_helper
        # placement
        self.moved_to_device, self.python_scalar = placement.moved_to_device, placement.python_scalar
        self.index_only, self.meets_other_tensors = placement.index_only, placement.meets_other_tensors

    @property
    def training_loops(self) -> list[TrainingLoop]:
        """The module's training loops, in source order (``Loops.training_loops``)."""
        return self.loops.training_loops

    @property
    def step_functions(self) -> list[TrainingLoop]:
        """Functions that run one training step (``Loops.step_functions``)."""
        return self.loops.step_functions

    @property
    def training_functions(self) -> frozenset:
        """Functions that contain a training loop or are inlined into one."""
        return self.loops.training_functions

    @property
    def loss_builders(self) -> frozenset:
        """Functions whose return value is backpropagated (``Loops.loss_builders``)."""
        return self.loops.loss_builders

    @property
    def step_wrapper_calls(self) -> frozenset:
        """Calls that run backward and step inside a callable we cannot read."""
        return self.loops.step_wrapper_calls

    @property
    def eval_targets(self) -> frozenset[str]:
        """Dotted names put in eval mode anywhere in the module (``Modes.eval_targets``)."""
        return self.modes.eval_targets
