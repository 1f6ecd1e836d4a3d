"""The clock reads `bench.trace_phases` inserts into a copy of lens_widget: (file under
lens_widget/, anchor, replacement). Each anchor must occur exactly once in the current
source; "<clock>" marks where the clock's imports go. A phase's time is added to
``PH[name]``; names starting with "#" count calls."""

from __future__ import annotations

PATCHES: list[tuple[str, str, str]] = [
    # ---- the mode's handler (recorder.py)
    ("capture/recorder.py", "import sys\n", "import sys\n<clock>"),
    (
        "capture/recorder.py",
        """        facts = FACTS[func]
        if facts.metadata:
            return func(*args, **kwargs) if kwargs else func(*args)
        frame = sys._getframe(1)""",
        """        _t0 = _ns()
        facts = FACTS[func]
        if facts.metadata:
            _r = func(*args, **kwargs) if kwargs else func(*args)
            PH["metadata calls (passed through)"] += _ns() - _t0
            PH["#metadata"] += 1
            return _r
        PH["#handler"] += 1
        frame = sys._getframe(1)""",
    ),
    (
        "capture/recorder.py",
        """            return self._call_quietly(facts, func, args, kwargs, frame)
        # Inputs are resolved before the call: an in-place op changes their versions.
        inputs = self._resolve_plain(func, args, kwargs)""",
        """            PH["handler: entry checks"] += _ns() - _t0
            return self._call_quietly(facts, func, args, kwargs, frame)
        # Inputs are resolved before the call: an in-place op changes their versions.
        _t1 = _ns()
        PH["handler: entry checks"] += _t1 - _t0
        inputs = self._resolve_plain(func, args, kwargs)
        _t2 = _ns()
        PH["resolve inputs"] += _t2 - _t1""",
    ),
    (
        "capture/recorder.py",
        """        try:
            out = func(*args, **kwargs) if kwargs else func(*args)
        except BaseException as err:
            with self.quiet:
                self._record_failure(facts, inputs, (), err, frame)
            raise
        if type(out) is not Tensor:
            with self.quiet:
                return self._record_result(facts, inputs, (), args, kwargs, out, frame)
        self.record(facts, inputs, (out,), (), frame)
        return out""",
        """        _t3 = _ns()
        PH["handler: rng / autocast checks"] += _t3 - _t2
        try:
            out = func(*args, **kwargs) if kwargs else func(*args)
        except BaseException as err:
            with self.quiet:
                self._record_failure(facts, inputs, (), err, frame)
            raise
        _t4 = _ns()
        PH["[kernel]"] += _t4 - _t3
        if type(out) is not Tensor:
            with self.quiet:
                _r = self._record_result(facts, inputs, (), args, kwargs, out, frame)
            PH["record: several outputs (whole)"] += _ns() - _t4
            return _r
        self.record(facts, inputs, (out,), (), frame)
        return out""",
    ),
    (
        "capture/recorder.py",
        """        quiet = self.quiet
        if self.in_transform or transform_running():""",
        """        _c0 = _ns()
        PH["#careful"] += 1
        quiet = self.quiet
        if self.in_transform or transform_running():""",
    ),
    (
        "capture/recorder.py",
        """        try:
            out = self._call(func, args, kwargs)
        except BaseException as err:
            with quiet:
                self._record_failure(facts, inputs, writes, err, frame)
            raise
        with quiet:
            if self._wraps_result:
                out = self._record_result_hooked(facts, inputs, writes, args, kwargs, out, frame)
            else:
                out = self._record_result(facts, inputs, writes, args, kwargs, out, frame)
            if self.in_transform and not transform_running():
                self.in_transform = False  # back to the fast path, unless a feature says
                self.careful = self._steps.careful
            return out""",
        """        _c1 = _ns()
        PH["careful path: before the call (inputs, writes)"] += _c1 - _c0
        try:
            out = self._call(func, args, kwargs)
        except BaseException as err:
            with quiet:
                self._record_failure(facts, inputs, writes, err, frame)
            raise
        _c2 = _ns()
        PH["[kernel]"] += _c2 - _c1
        with quiet:
            if self._wraps_result:
                out = self._record_result_hooked(facts, inputs, writes, args, kwargs, out, frame)
            else:
                out = self._record_result(facts, inputs, writes, args, kwargs, out, frame)
            if self.in_transform and not transform_running():
                self.in_transform = False  # back to the fast path, unless a feature says
                self.careful = self._steps.careful
        PH["careful path: record (whole)"] += _ns() - _c2
        return out""",
    ),
    # ---- a record made (op_recording.py)
    ("capture/op_recording.py", "import weakref\n", "import weakref\n<clock>"),
    (
        "capture/op_recording.py",
        """        replay, parent_refs, params = inputs
        tracker = self.tracker
        site, source = find_call_site(frame, outside_path, self.top_frame)
        key""",
        """        _r0 = _ns()
        replay, parent_refs, params = inputs
        tracker = self.tracker
        site, source = find_call_site(frame, outside_path, self.top_frame)
        _r1 = _ns()
        PH["record: call site (frame walk)"] += _r1 - _r0
        key""",
    ),
    (
        "capture/op_recording.py",
        """        stack = tracker.stack
        shapes: tuple""",
        """        stack = tracker.stack
        _r2 = _ns()
        PH["record: layer key (labels: after the pass)"] += _r2 - _r1
        shapes: tuple""",
    ),
    (
        "capture/op_recording.py",
        """
        book = self.book
        nodes = book.nodes""",
        """
        _r3 = _ns()
        PH["record: output metadata"] += _r3 - _r2
        book = self.book
        nodes = book.nodes""",
    ),
    (
        "capture/op_recording.py",
        """        if outputs:
            self._note_outputs(node, outputs, node.layer, node.pass_index)
            if self.in_transform:""",
        """        _r4 = _ns()
        PH["record: OpRecord, lists, pending"] += _r4 - _r3
        if outputs:
            self._note_outputs(node, outputs, node.layer, node.pass_index)
            PH["record: producers and saved values"] += _ns() - _r4
            if self.in_transform:""",
    ),
    # ---- sources (tensor_book.py)
    ("capture/tensor_book.py", "import sys\n", "import sys\n<clock>"),
    (
        "capture/tensor_book.py",
        """        later = self.labels_later
        if not later and name in self.by_label:""",
        """        _a0 = _ns()
        PH["#sources"] += 1
        later = self.labels_later
        if not later and name in self.by_label:""",
    ),
    (
        "capture/tensor_book.py",
        """        for hook in self.source_hooks:
            hook(tensor, node)
        return node""",
        """        for hook in self.source_hooks:
            hook(tensor, node)
        PH["(of which: source nodes of params and inputs)"] += _ns() - _a0
        return node""",
    ),
    # ---- module calls (module_calls.py): the stand-in runs with torch's module's globals,
    # so it reaches the clock through its state class
    ("capture/module_calls.py", "import threading\n", "import threading\n<clock>"),
    (
        "capture/module_calls.py",
        """    swapped = False""",
        """    ns = staticmethod(_ns)
    ph = PH
    swapped = False""",
    ),
    (
        "capture/module_calls.py",
        """        tracker = trackers[0]
        tracker.enter(module, args, kwargs)
        try:""",
        """        tracker = trackers[0]
        _m0 = calls.ns()
        tracker.enter(module, args, kwargs)
        calls.ph["module calls: enter"] += calls.ns() - _m0
        calls.ph["#modules"] += 1
        try:""",
    ),
    (
        "capture/module_calls.py",
        """        return tracker.exit(output)  # the same object unless an intervention replaced it
    for""",
        """        _m0 = calls.ns()
        output = tracker.exit(output)  # the same object unless an intervention replaced it
        calls.ph["module calls: exit (outputs, identity ops)"] += calls.ns() - _m0
        return output
    for""",
    ),
    ("capture/module_outputs.py", "import sys\n", "import sys\n<clock>"),
    (
        "capture/module_outputs.py",
        """                with torch._C.DisableTorchFunction():
                    recorder = self._recorder""",
        """                _i0 = _ns()
                PH["#identity ops"] += 1
                with torch._C.DisableTorchFunction():
                    recorder = self._recorder""",
    ),
    (
        "capture/module_outputs.py",
        """                    index = 0
            if node is not None:""",
        """                    index = 0
                PH["(of which: identity ops, their record phases too)"] += _ns() - _i0
            if node is not None:""",
    ),
    # ---- once per trace (trace.py, session.py)
    ("capture/trace.py", "from typing import Any\n", "from typing import Any\n<clock>"),
    (
        "capture/trace.py",
        """    args = inputs if isinstance(inputs, tuple) else (inputs,)
    spec = offload_spec(offload, memory_budget)""",
        """    _p0 = _ns()
    args = inputs if isinstance(inputs, tuple) else (inputs,)
    spec = offload_spec(offload, memory_budget)""",
    ),
    (
        "capture/trace.py",
        """    session.start()
    try:
        output = model(*args, **kwargs)""",
        """    PH["per trace: names, recorder, inputs"] += _ns() - _p0
    _p0 = _ns()
    session.start()
    PH["per trace: start (patches, mode)"] += _ns() - _p0
    try:
        output = model(*args, **kwargs)""",
    ),
    (
        "capture/trace.py",
        """    log = session.finish(output, error, stacklevel=2)""",
        """    _p0 = _ns()
    log = session.finish(output, error, stacklevel=2)
    PH["per trace: finish (put back, build the log)"] += _ns() - _p0""",
    ),
    ("capture/build_log.py", "import warnings\n", "import warnings\n<clock>"),
    (
        "capture/build_log.py",
        """                self._labels()\n""",
        """                _f0 = _ns()
                self._labels()
                PH["(not in the trace: labels, on the first read)"] += _ns() - _f0\n""",
    ),
    (
        "capture/build_log.py",
        """            fill_details(self._details, self._pending, None)""",
        """            _f0 = _ns()
            fill_details(self._details, self._pending, None)
            PH["(not in the trace: filling records on their first read)"] += _ns() - _f0""",
    ),
]
