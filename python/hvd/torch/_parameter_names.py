"""The names under which a distributed optimizer's parameters are reduced, checked as
Horovod checks them (both torch wrappers, optimizer.py and adasum_optimizer.py)."""


def parameter_names(param_groups, named_parameters):
    """{parameter: name} for every parameter of param_groups; ValueError naming what is wrong
    with named_parameters. None names them by their place in the groups."""
    if named_parameters is not None:
        named_parameters = list(named_parameters)
    else:
        named_parameters = [(f"param.{g}.{i}", p) for g, group in enumerate(param_groups)
                            for i, p in enumerate(group["params"])]
    if any(not isinstance(item, tuple) or len(item) != 2 for item in named_parameters):
        raise ValueError("named_parameters should be (name, parameter) pairs, as model.named_parameters() gives")
    names = [name for name, _ in named_parameters]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError("parameter names in named_parameters must be unique; found again: " + ", ".join(duplicates))
    optimized = {id(p) for group in param_groups for p in group["params"]}
    unnamed = optimized - {id(p) for _, p in named_parameters}
    if unnamed:
        raise ValueError(f"named_parameters misses {len(unnamed)} of the optimizer's parameters; pass "
                         "model.named_parameters() for the model whose parameters the optimizer updates")
    return {p: name for name, p in named_parameters}
