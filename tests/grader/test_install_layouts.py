"""Every place the grader is installed, built here for real: it confines and grades there with the
strongest protection the layout allows (grader.sandbox.confine). torch comes from this test run's own
environment through a ``.pth`` file or links, so no test downloads anything."""
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from grader.sandbox.confine import find_bwrap

ROOT = Path(__file__).resolve().parents[2]
PURELIB = sysconfig.get_path("purelib")  # torch, click, nbclient ... of this test run
BASE_PYTHON = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
SANDBOX = sys.platform.startswith("linux") and find_bwrap() is not None

pytestmark = [pytest.mark.slow]
# --ignore-installed: the layouts see this run's packages, the course's own editable install among them,
# and pip outside a virtualenv counts every folder as its own: it would uninstall that install first
INSTALL = ("install", "-q", "--no-deps", "--no-index", "--ignore-installed")


def venv(path: Path) -> Path:
    """A virtualenv at ``path`` (no pip), seeing this run's packages through a ``.pth`` file; its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    python = path / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "test-runtime.pth").write_text(PURELIB + "\n")
    return python


def grade_solutions(python, *args, cwd=ROOT, env=None, command=None):
    """``grade check --submission solutions`` of the checkout, run by ``python`` (the checkout's grader,
    as from a fresh clone), as JSON."""
    command = command or [str(python), "-m", "grader"]
    result = subprocess.run([*command, "check", "--submission", str(ROOT / "solutions"), "--format", "json", *args],
                            cwd=cwd, capture_output=True, text=True, timeout=600,
                            env={**os.environ, **(env or {})})
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return json.loads(result.stdout)


def full_marks(data):
    return data["score"] == data["max_score"] == 600 and all(
        e["status"] == "passed" for a in data["assignments"] for e in a["exercises"])


@pytest.fixture
def under_tmp():
    """A folder directly under /tmp, as ``python -m venv /tmp/venv`` makes (pytest's tmp_path is deeper)."""
    folder = Path(tempfile.mkdtemp(prefix="venv-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_venv_directly_under_tmp(under_tmp):
    """The worker's private /tmp once hid it: every exercise was charged 'crashed' for the grader's fault."""
    data = grade_solutions(venv(under_tmp))
    assert full_marks(data), data


def test_a_venv_nested_under_tmp_at_a_path_with_spaces_and_non_ascii(tmp_path):
    data = grade_solutions(venv(tmp_path / "my envs" / "übung venv"))
    assert full_marks(data), data


def test_a_symlinked_venv(tmp_path):
    venv(tmp_path / "real")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    data = grade_solutions(tmp_path / "link" / "bin" / "python")
    assert full_marks(data), data


@pytest.fixture(scope="module")
def course_wheel(tmp_path_factory):
    """The course's own wheel, built from a copy of the checkout (a build writes beside its sources)."""
    pytest.importorskip("setuptools", minversion="70.1")  # builds wheels without the wheel package
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "grader", source / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-index", "--no-build-isolation",
                    "-w", str(out), str(source)], check=True, capture_output=True, timeout=300)
    return next(out.glob("*.whl"))


def user_site(python: Path, base: Path) -> dict:
    """A user site under ``base`` for ``python`` that finds this run's packages through a ``.pth`` file
    (which only a Python that reads its user site processes), and the environment that selects it."""
    env = {"PYTHONUSERBASE": str(base), "HOME": str(base)}
    site = subprocess.run([str(python), "-c", "import site; print(site.getusersitepackages())"], capture_output=True,
                          text=True, check=True, env={**os.environ, **env}).stdout.strip()
    Path(site).mkdir(parents=True)
    Path(site, "test-runtime.pth").write_text(PURELIB + "\n")
    return env


USER_PYTHONS = [pytest.param(BASE_PYTHON, id="base-python")] + [
    pytest.param(Path("/usr/bin/python3"), id="system-python") for _ in [0]
    if Path("/usr/bin/python3").resolve() != BASE_PYTHON.resolve()]


@pytest.mark.parametrize("python", USER_PYTHONS)
def test_pip_install_user(python, course_wheel, tmp_path):
    """``pip install --user``: the user site (which ``python -s`` turns off) holds torch and the grader.
    Also the machine's own /usr/bin/python3, where it is another interpreter than this run's base."""
    probe = subprocess.run([str(python), "-c", "import sys; print(sys.version_info[:2] == %r)"
                            % (tuple(sys.version_info[:2]),)], capture_output=True, text=True)
    if probe.stdout.strip() != "True":
        pytest.skip(f"{python} is another Python version than this run's torch")
    env = user_site(python, tmp_path / "userbase")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), *INSTALL, "--user",
                    "--break-system-packages", str(course_wheel)],
                   check=True, capture_output=True, timeout=300, env={**os.environ, **env})
    grade = tmp_path / "userbase" / "bin" / "grade"
    data = grade_solutions(None, command=[str(grade)], env=env)
    assert full_marks(data), data


@pytest.fixture(scope="module")
def distribution_wheel(course, tmp_path_factory):
    """The student distribution's wheel (what ``pip install git+URL`` of it builds)."""
    pytest.importorskip("setuptools", minversion="70.1")
    from grader.course.distribution import write_distribution

    out = tmp_path_factory.mktemp("release") / "attention-course"
    write_distribution(course, course.assignments, out)
    wheels = tmp_path_factory.mktemp("dist-wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-index", "--no-build-isolation",
                    "-w", str(wheels), str(out)], check=True, capture_output=True, timeout=300)
    return next(wheels.glob("*.whl"))


@pytest.fixture(scope="module")
def distribution_venv(distribution_wheel, tmp_path_factory):
    """A fresh venv with the distribution installed by pip, not editable (Colab's way)."""
    python = venv(tmp_path_factory.mktemp("colab") / "venv")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), *INSTALL, str(distribution_wheel)],
                   check=True, capture_output=True, timeout=300)
    return python


def test_the_pip_installed_distribution_grades_a_folder_outside_any_checkout(distribution_venv, tmp_path):
    """Its site-packages holds the course it carries (public suite): shown to the sandbox with that masked."""
    folder = tmp_path / "work"
    folder.mkdir()
    shutil.copy(ROOT / "solutions" / "01_attention_basics" / "attention_basics.py", folder)
    result = subprocess.run([str(distribution_venv.parent / "grade"), "check", "--format", "json"], cwd=folder,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    data = json.loads(result.stdout)
    assert (data["score"], data["max_score"]) == (100, 100)


@pytest.mark.skipif(not SANDBOX, reason="the masked course is the sandbox's view")
def test_the_sandbox_cannot_read_the_course_the_installed_package_carries(distribution_venv, tmp_path):
    probe = tmp_path / "work"
    probe.mkdir()
    (probe / "attention_basics.py").write_text(
        "import os\n"
        "def softmax(x, dim=-1):\n"
        "    import site, sysconfig\n"
        "    suites = os.path.join(sysconfig.get_path('purelib'), 'grader', '_course', 'suites')\n"
        "    seen = os.listdir(suites) if os.path.isdir(suites) and os.access(suites, os.R_OK) else []\n"
        "    if seen:\n"
        "        raise RuntimeError('saw ' + ' '.join(seen))\n"
        "    return x.softmax(dim)\n")
    result = subprocess.run([str(distribution_venv.parent / "grade"), "check", "--format", "json"], cwd=probe,
                            capture_output=True, text=True, timeout=300)
    data = json.loads(result.stdout)
    softmax = next(e for e in data["assignments"][0]["exercises"] if e["name"] == "softmax")
    assert "saw" not in softmax["feedback"] and softmax["status"] in ("passed", "forbidden"), softmax


def test_a_notebook_check_in_the_pip_installed_distribution_runs_headless(distribution_venv, tmp_path):
    """A notebook's ``check()`` in that venv, run by nbclient with the venv's own kernel."""
    pytest.importorskip("nbclient")
    folder = tmp_path / "colab"
    folder.mkdir()
    notebook = folder / "attention_basics.ipynb"
    shutil.copy(ROOT / "solutions" / "01_attention_basics" / "attention_basics.ipynb", notebook)
    script = ("import sys, nbformat\nfrom nbclient import NotebookClient\n"
              "nb = nbformat.read(sys.argv[1], as_version=4)\n"
              "NotebookClient(nb, timeout=300, kernel_name='python3', allow_errors=True,\n"
              "               resources={'metadata': {'path': sys.argv[2]}}).execute()\n"
              "nbformat.write(nb, sys.argv[1])\n")
    subprocess.run([str(distribution_venv), "-c", script, str(notebook), str(folder)], check=True,
                   capture_output=True, timeout=600, cwd=folder)
    import nbformat

    outputs = [o for cell in nbformat.read(notebook, as_version=4).cells if "check(" in cell.source
               for o in cell.get("outputs", [])]
    text = "\n".join(o.get("text", "") + "".join(o.get("traceback", [])) for o in outputs)
    assert outputs and "Error" not in text and "points, passed" in text, text[-3000:]


def prefix_like_conda(prefix: Path) -> Path:
    """A standalone installation at ``prefix`` (what conda makes: the interpreter, its standard library
    and its own site-packages under one prefix, no pyvenv.cfg), copied from this run's base Python
    (its libpython found by the base's absolute run path, as a relocated installation finds it);
    this run's packages through a ``.pth`` file. Its python."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    base = Path(sys.base_prefix)
    (prefix / "bin").mkdir(parents=True)
    shutil.copy2(base / "bin" / version, prefix / "bin" / version)
    (prefix / "bin" / "python3").symlink_to(version)
    skip = shutil.ignore_patterns("site-packages", "test", "idlelib", "tkinter", "turtledemo", "lib2to3",
                                  "config-*", "__pycache__", "ensurepip")
    shutil.copytree(base / "lib" / version, prefix / "lib" / version, ignore=skip)
    # a conda prefix is the user's own: Debian's marker (PEP 668), copied with the standard library from
    # /usr/bin/python3's, made pip refuse to install into it (issue 35, a newcomer's run)
    (prefix / "lib" / version / "EXTERNALLY-MANAGED").unlink(missing_ok=True)
    python = prefix / "bin" / version
    # the site folder this interpreter reads: site-packages, or dist-packages where its site.py is Debian's
    # (issue 35: a .pth in site-packages went unread there, and torch with it)
    folders = subprocess.run([str(python), "-S", "-c", "import site; print(*site.getsitepackages(), sep='\\n')"],
                             capture_output=True, text=True, timeout=60, check=True).stdout.split()
    site_folder = next(Path(f) for f in folders if Path(f).is_relative_to(prefix))
    site_folder.mkdir(parents=True, exist_ok=True)
    (site_folder / "test-runtime.pth").write_text(PURELIB + "\n")
    return python


def test_a_conda_style_prefix(course_wheel, tmp_path):
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    if not (Path(sys.base_prefix) / "lib" / version / "os.py").is_file():
        pytest.skip("this run's base Python is not a prefix installation to copy")
    python = prefix_like_conda(tmp_path / "conda")
    probe = subprocess.run([str(python), "-c", "import sys, torch; print(sys.prefix == sys.base_prefix)"],
                           capture_output=True, text=True, timeout=120)
    assert probe.stdout.strip() == "True", probe.stderr[-2000:]
    installed = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), *INSTALL, str(course_wheel)],
                               capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr[-2000:]  # pip's own reason, when it refuses
    # where this interpreter's pip puts scripts: bin/, or local/bin/ where its sysconfig is Debian's
    scripts = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('scripts'))"],
                             capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    data = grade_solutions(None, command=[str(Path(scripts) / "grade")])
    assert full_marks(data), data
