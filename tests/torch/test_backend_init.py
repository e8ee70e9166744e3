"""init_process_group("glucx") with every init method: env:// under the venv's torchrun, tcp://
and file://; each job then runs a few collectives on the default group and on a subgroup made
with new_group(backend="glucx"). The torchrun job never imports glucx: the backend name must come
from the package's start-up hook."""
import sys

import pytest

import backend_harness
from backend_harness import ok

CHECKS = ("all_reduce", "all_gather", "new_group/broadcast", "barrier")


@pytest.fixture(scope="module", params=[("tcp", 2), ("file", 2)],
                ids=lambda p: f"{p[0]}-{p[1]}ranks")
def url_job(request, tmp_path_factory):
    backend_harness.glucx_importable_or_fail()
    method, world = request.param
    out = tmp_path_factory.mktemp(f"init-{method}{world}")
    params = {"method": method}
    if method == "file":
        params["path"] = str(out / "rendezvous")
    launch = backend_harness.spawn("init_method", world, str(out), params=params, timeout_s=90)
    launch.method = method
    return launch


def test_init_method(url_job):
    ok(url_job, f"init/{url_job.method}", *CHECKS)
    url_job.assert_clean_exit()


@pytest.fixture(scope="module", params=[2, 4], ids=lambda p: f"{p}ranks")
def torchrun_job(request, tmp_path_factory):
    backend_harness.glucx_importable_or_fail()
    world = request.param
    out = tmp_path_factory.mktemp(f"init-torchrun{world}")
    return backend_harness.torchrun(world, str(out), timeout_s=120)


def test_torchrun_env(torchrun_job):
    ok(torchrun_job, "init/env", *CHECKS, "job")
    assert torchrun_job.launcher_rc == 0, torchrun_job.describe()
    assert not torchrun_job.hung, torchrun_job.describe()


def test_torchrun_workers_ran_this_interpreter_without_importing_glucx(torchrun_job):
    for r, rec in ok_records(torchrun_job, "start").items():
        assert rec["prefix"] == sys.prefix, (
            f"rank {r} ran {rec['executable']} (prefix {rec['prefix']}), the tests run "
            f"{sys.executable} (prefix {sys.prefix})")
        assert not rec["glucx_imported_before"], f"rank {r}: glucx imported before the job"


def ok_records(job, name):
    return job.assert_ok(name)
