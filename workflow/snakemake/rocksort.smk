# Reusable Snakemake rule: sort alignments with `samtools rocksort`.
#
# Include it from a Snakefile and describe the samples in the config:
#
#     configfile: "config.yaml"
#     include: "rocksort.smk"
#
#     rule all:
#         input: expand("sorted/{sample}.bam", sample=config["samples"])
#
# config.yaml:
#
#     samples:                     # sample name -> SAM, BAM or CRAM file
#       A: data/A.bam
#     rocksort:                    # every key is optional
#       output: "sorted/{sample}.bam"   # where the sorted file goes
#       threads: 4                 # -@ (Snakemake lowers it to --cores)
#       mem_mb: 4096               # resources.mem_mb -> --max-memory, all threads
#       sort_by_name: false        # true: -n (natural read-name order)
#       extra: "--write-index"     # any other rocksort options
#
# The rule runs `samtools rocksort`, so the samtools on PATH must be the one
# built from this repository (or the Docker image, see ../../Dockerfile).
# Its temporary database goes to resources.tmpdir (Snakemake's tmpdir,
# $TMPDIR by default); the output is only renamed into place once complete.
#
# Other outputs or options per rule, by inheritance:
#
#     use rule rocksort as rocksort_by_name with:
#         output: "by_name/{sample}.bam"
#         log: "logs/rocksort_by_name/{sample}.log"
#         params: order="-n", extra=""
#
# Memory: mem_mb is the budget for the whole job and maps to --max-memory,
# which rocksort divides among its threads.  Do not also put -m in `extra`:
# rocksort refuses -m together with --max-memory.

_ROCKSORT = config.get("rocksort", {}) or {}


rule rocksort:
    input:
        lambda wildcards: config["samples"][wildcards.sample],
    output:
        _ROCKSORT.get("output", "sorted/{sample}.bam"),
    log:
        "logs/rocksort/{sample}.log",
    wildcard_constraints:
        sample="[^/]+",
    params:
        order="-n" if _ROCKSORT.get("sort_by_name", False) else "",
        extra=_ROCKSORT.get("extra", ""),
    threads: int(_ROCKSORT.get("threads", 2))
    resources:
        mem_mb=int(_ROCKSORT.get("mem_mb", 2048)),
    shell:
        "samtools rocksort -@ {threads} --max-memory {resources.mem_mb}M"
        " {params.order} {params.extra} -T {resources.tmpdir:q}"
        " -o {output:q} {input:q} 2> {log:q}"
