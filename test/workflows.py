"""Tests of the workflow-engine examples in workflow/: the Snakemake
example (workflow/snakemake/, the reusable rule in rocksort.smk) and the
CWL tool (workflow/cwl/samtools-rocksort.cwl); and the command line an
nf-core module writes, several inputs sorted into one (NFCORE_SCRIPT).

Each test runs the real engine, from the project's venv (scripts/deps.sh
installs snakemake and cwltool there), on a copy of workflow/ inside the
test's own directory, with the samtools under test first on PATH.  Every
output must hold the oracle's records in the oracle's order (samtools 1.24,
as for every other test).  A missing engine is a failure, not a skip.

To run only these:
    run_tests.py -k 'workflow*'
"""

import json
import os
import shlex
import shutil

from harness import VENV_PYTHON, Failure, run, tail, write_text

WORKFLOW_DIR = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "workflow")
# What the Snakemake example sorts (config.yaml) and where it puts it
# (Snakefile): sample -> input under workflow/data/, output dir -> order.
SNAKEMAKE_SAMPLES = {"A": "sampleA.sam", "B": "sampleB.bam"}
SNAKEMAKE_OUTPUTS = {"sorted": [], "by_name": ["-n"]}
# Environment that sanitizer builds and CRAM need; cwltool passes on only
# what it is told to.
PRESERVED = ("ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS", "REF_PATH")
VENV_BIN = os.path.dirname(VENV_PYTHON)


def engine(name):
    """The engine's executable, from the venv first; none is a failure."""
    path = os.path.join(VENV_BIN, name)
    if os.access(path, os.X_OK):
        return path
    path = shutil.which(name)
    if not path:
        raise Failure(f"{name} is not installed (scripts/deps.sh test "
                      f"installs it into .venv): this test cannot run")
    return path


def samtools_dir(case):
    """A directory whose `samtools` is the command under test: the
    binary's own when it is called samtools and no ROCKSORT_CMD stands
    in, else a shim that runs ROCKSORT_CMD for rocksort."""
    binary = case.session.binary
    if case.session.rocksort_cmd == [binary, "rocksort"] \
            and os.path.basename(binary) == "samtools":
        return os.path.dirname(binary)
    shim_dir = os.path.join(case.dir, "bin")
    os.makedirs(shim_dir, exist_ok=True)
    shim = os.path.join(shim_dir, "samtools")
    write_text(shim, "#!/bin/sh\n"
               'if [ "$1" = rocksort ]; then shift; exec '
               f"{shlex.join(case.session.rocksort_cmd)} \"$@\"; fi\n"
               f"exec {shlex.quote(binary)} \"$@\"\n")
    os.chmod(shim, 0o755)
    return shim_dir


def workflow_env(case):
    env = dict(case.session.env, TMPDIR=case.tmp,
               XDG_CACHE_HOME=os.path.join(case.dir, "cache"))
    env["PATH"] = os.pathsep.join([samtools_dir(case), VENV_BIN,
                                   env.get("PATH", "")])
    return env


def copy_workflows(case):
    dst = os.path.join(case.dir, "workflow")
    shutil.copytree(WORKFLOW_DIR, dst, ignore=shutil.ignore_patterns(
        ".snakemake", "sorted", "by_name", "logs", "__pycache__"))
    return dst


def expected(case, src, args, name):
    """The oracle's sort of src with args, in a file called name."""
    out_dir = os.path.join(case.dir, "expected")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, name)
    case.session.oracle_ok("sort", [*args, "--no-PG", "-o", path, src])
    return path


def expect_output(case, path, what):
    if not os.path.isfile(path) or os.path.getsize(path) == 0:
        raise Failure(f"{what}: no output {os.path.relpath(path, case.dir)}")


def expect_rocksort_pg(case, path, words):
    """rocksort's @PG line shows the options the engine passed."""
    lines = [l for l in case.load(path).header
             if l.startswith("@PG") and "rocksort" in l]
    if not lines:
        raise Failure(f"{os.path.basename(path)}: no rocksort @PG line")
    cl = lines[-1].split("\tCL:", 1)[-1]
    missing = [w for w in words if f" {w} " not in f" {cl} "]
    if missing:
        raise Failure(f"{os.path.basename(path)}: the command line lacks "
                      f"{missing}", [cl])


def expect_no_rocksort_temp(case):
    left = [n for n in os.listdir(case.tmp) if "rocksort" in n]
    if left:
        raise Failure("temporary database left behind", left[:5])


def error_lines(text):
    """The lines of an engine's output that say what went wrong."""
    lines = text.decode(errors="replace").splitlines()
    picked = [l.strip()[:200] for l in lines
              if "rror" in l or "Missing" in l or "exit status" in l
              or "not found" in l]
    return picked[:4] or tail(text, 4)


def log_lines(directory):
    lines = []
    for root, _, files in os.walk(directory):
        for name in sorted(files):
            with open(os.path.join(root, name), errors="replace") as f:
                text = f.read().strip()
            if text:
                lines += [f"{name}: {l}" for l in text.splitlines()[-3:]]
    return lines


def test_workflow_snakemake(case):
    """`snakemake --cores 2` on the example: two samples, each sorted by
    coordinate (the rule as included) and by name (`use rule` with -n)."""
    snakemake = engine("snakemake")
    wf = copy_workflows(case)
    workdir = os.path.join(wf, "snakemake")
    result = run([snakemake, "--cores", "2"], cwd=workdir,
                 env=workflow_env(case))
    if result.returncode != 0:
        raise Failure(f"snakemake exited with {result.returncode}",
                      error_lines(result.stderr)
                      + log_lines(os.path.join(workdir, "logs")))
    for out_dir, args in SNAKEMAKE_OUTPUTS.items():
        for sample, source in SNAKEMAKE_SAMPLES.items():
            actual = os.path.join(workdir, out_dir, f"{sample}.bam")
            expect_output(case, actual, "snakemake")
            want = expected(case, os.path.join(wf, "data", source), args,
                            f"{out_dir}-{sample}.bam")
            case.expect_same(actual, want)
    # threads: 2 and mem_mb: 256 in config.yaml -> -@ 2 --max-memory 256M.
    expect_rocksort_pg(case, os.path.join(workdir, "sorted", "A.bam"),
                       ["-@ 2", "--max-memory 256M"])
    expect_rocksort_pg(case, os.path.join(workdir, "by_name", "B.bam"),
                       ["-n"])
    warnings = log_lines(os.path.join(workdir, "logs"))
    if warnings:
        raise Failure("rocksort printed something on stderr", warnings)
    expect_no_rocksort_temp(case)


def run_cwl(case, job):
    """cwltool --no-container on the tool and a job file in the copy of
    workflow/cwl/.  -> (output object, output directory)"""
    cwltool = engine("cwltool")
    wf = copy_workflows(case)
    cwl_dir = os.path.join(wf, "cwl")
    if isinstance(job, dict):
        write_text(os.path.join(cwl_dir, "test-job.json"), json.dumps(job))
        job = "test-job.json"
    out_dir = os.path.join(case.dir, "cwl-out")
    scratch = os.path.join(case.dir, "cwl-tmp")
    os.makedirs(scratch)
    preserve = [a for v in PRESERVED if v in case.session.env
                for a in ("--preserve-environment", v)]
    result = run([cwltool, "--no-container", "--quiet", "--disable-color",
                  *preserve,
                  "--outdir", out_dir,
                  "--tmpdir-prefix", os.path.join(scratch, "tmp-"),
                  "--tmp-outdir-prefix", os.path.join(scratch, "out-"),
                  "samtools-rocksort.cwl", job],
                 cwd=cwl_dir, env=workflow_env(case))
    if result.returncode != 0:
        details = error_lines(result.stderr + result.stdout)
        if os.path.isdir(out_dir):
            details += log_lines(out_dir)
        raise Failure(f"cwltool exited with {result.returncode}", details)
    try:
        outputs = json.loads(result.stdout)
    except ValueError:
        raise Failure("cwltool printed no JSON output object",
                      tail(result.stdout))
    return outputs, out_dir, wf


def cwl_file(outputs, name, out_dir):
    obj = outputs.get(name)
    if not isinstance(obj, dict) or not obj.get("path"):
        raise Failure(f"cwltool reported no `{name}` output",
                      [json.dumps(outputs)[:200]])
    path = obj["path"]
    if os.path.dirname(os.path.realpath(path)) != os.path.realpath(out_dir):
        raise Failure(f"`{name}` output is not in --outdir", [path])
    return path


def test_workflow_cwl_job_file(case):
    """The shipped job file: BAM sorted by coordinate, -@ 2, 256 MiB."""
    outputs, out_dir, wf = run_cwl(case, "job.yml")
    actual = cwl_file(outputs, "sorted", out_dir)
    if os.path.basename(actual) != "sampleB.sorted.bam":
        raise Failure(f"output named {os.path.basename(actual)}, "
                      "job.yml asks for sampleB.sorted.bam")
    expect_output(case, actual, "cwltool")
    want = expected(case, os.path.join(wf, "data", "sampleB.bam"),
                    ["-l", "6"], "sampleB.sorted.bam")
    case.expect_same(actual, want)
    expect_rocksort_pg(case, actual, ["-@ 2", "--max-memory 256M", "-l 6"])
    log = cwl_file(outputs, "log", out_dir)
    if os.path.getsize(log):
        raise Failure("rocksort printed something on stderr",
                      log_lines(out_dir))
    expect_no_rocksort_temp(case)


def test_workflow_cwl_name_order(case):
    """Inputs set by a job the test writes: SAM in, name order, SAM out
    (from output_name), extra options passed through (-v)."""
    job = {"alignments": {"class": "File", "path": "../data/sampleA.sam"},
           "output_name": "byname.sam", "sort_by_name": True,
           "threads": 1, "memory_mb": 64, "extra_options": ["-v"]}
    outputs, out_dir, wf = run_cwl(case, job)
    actual = cwl_file(outputs, "sorted", out_dir)
    expect_output(case, actual, "cwltool")
    want = expected(case, os.path.join(wf, "data", "sampleA.sam"), ["-n"],
                    "byname.sam")
    case.expect_same(actual, want)
    expect_rocksort_pg(case, actual, ["-n", "-@ 1", "--max-memory 64M", "-v"])
    if not os.path.getsize(cwl_file(outputs, "log", out_dir)):
        raise Failure("the log output is empty: -v statistics expected")
    expect_no_rocksort_temp(case)


# The shape of nf-core/modules' samtools/sort script, with rocksort in
# samtools sort's place: the BAMs of one sample (staged as links in the
# task's directory, as Nextflow stages them) sorted into one, indexed, the
# temporary data under -T PREFIX in the task's directory.
NFCORE_SCRIPT = """#!/bin/bash
set -euo pipefail
prefix=sample
samtools rocksort \\
    --write-index \\
    -T ${prefix} \\
    --threads 2 \\
    -o ${prefix}.bam \\
    "$@"
"""


def test_workflow_nfcore_several_inputs(case):
    """`samtools rocksort ... -o sample.bam a.sam b.bam`, as an nf-core
    module calls it: the records of samtools 1.24's `samtools cat | samtools
    sort` of the inputs (each made BAM first: cat takes one format), an
    index beside the output, nothing else left in the task's directory."""
    task = os.path.join(case.dir, "task")
    os.makedirs(task)
    inputs = []
    for name in ("sampleA.sam", "sampleB.bam"):
        os.symlink(os.path.join(WORKFLOW_DIR, "data", name), os.path.join(task, name))
        inputs.append(name)
    script = os.path.join(case.dir, "command.sh")
    write_text(script, NFCORE_SCRIPT)
    result = run(["bash", script, *inputs], cwd=task, env=workflow_env(case))
    if result.returncode != 0:
        raise Failure(f"the module's script exited with {result.returncode}",
                      error_lines(result.stderr))
    if result.stderr.strip():
        raise Failure("rocksort printed something on stderr", tail(result.stderr))
    work = os.path.join(case.dir, "expected")
    os.makedirs(work)
    bams = []
    for name in inputs:
        bams.append(os.path.join(work, name + ".bam"))
        case.session.oracle_ok("view", ["-b", "--no-PG", "-o", bams[-1],
                                        os.path.join(task, name)])
    joined = os.path.join(work, "cat.bam")
    case.session.oracle_ok("cat", ["--no-PG", "-o", joined, *bams])
    want = expected(case, joined, [], "sample.bam")
    case.expect_same(os.path.join(task, "sample.bam"), want)
    left = sorted(set(os.listdir(task)) - {*inputs, "sample.bam", "sample.bam.csi"})
    if left or not os.path.exists(os.path.join(task, "sample.bam.csi")):
        raise Failure("the task's directory holds other files than the output and "
                      "its index", left)
    expect_no_rocksort_temp(case)
