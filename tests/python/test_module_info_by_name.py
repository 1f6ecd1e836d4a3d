"""A module's info is made after the pass, without ModuleInfo's __init__, from what the
module tracker counted per call (its passes and ops): every field is set, in the order
__init__ sets them, and a log's infos equal those __init__ would make."""

import dataclasses

import torch
from torch import nn

import lens_widget as lw
from lens_widget.log.records import ModuleInfo


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
        self.skip = nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x) + self.skip(self.inner(x))


def test_every_module_info_field_is_set_in_init_order():
    log = lw.trace(_Net(), torch.randn(2, 3))
    names = [f.name for f in dataclasses.fields(ModuleInfo)]
    assert set(log.modules) == {"", "inner", "inner.0", "inner.1", "skip"}
    for info in log.modules.values():
        assert list(vars(info)) == names
        rebuilt = ModuleInfo(**{name: getattr(info, name) for name in names})
        assert rebuilt == info
    assert log.modules["inner"].n_passes == 2
    assert log.modules["inner.0"].parent == "inner"
    assert log.modules["skip"].class_name == "Identity"
