#!/usr/bin/env cwl-runner
# samtools rocksort as a CWL tool.  Run without a container, with the
# samtools built from this repository first on PATH:
#
#     PATH=/path/to/repo:$PATH cwltool --no-container samtools-rocksort.cwl job.yml
#
# or with the Docker image built from the repository's Dockerfile
# (docker build -t samtools-rocksort .), which the DockerRequirement hint names.
cwlVersion: v1.2
class: CommandLineTool
label: samtools rocksort
doc: |
  Sorts SAM/BAM/CRAM alignments like `samtools sort` (same order and header
  as samtools 1.24, apart from @PG) through a temporary RocksDB database.
  The temporary database goes to the runner's temporary directory.

baseCommand: [samtools, rocksort]

hints:
  DockerRequirement:
    dockerPull: samtools-rocksort:latest
  SoftwareRequirement:
    packages:
      samtools-rocksort:
        version: ["0.1.0"]

requirements:
  ResourceRequirement:
    coresMin: $(inputs.threads)
    ramMin: $(inputs.memory_mb)

inputs:
  alignments:
    type: File
    doc: Input SAM, BAM or CRAM file.
    inputBinding:
      position: 100
  output_name:
    type: string
    default: sorted.bam
    doc: |
      Name of the sorted output file; its extension (.bam, .sam, .cram)
      picks the format unless extra_options has -O.
    inputBinding:
      prefix: -o
      position: 10
  threads:
    type: int
    default: 1
    doc: Additional threads (-@), also the cores asked of the runner.
    inputBinding:
      prefix: -@
      position: 1
  memory_mb:
    type: int
    default: 1024
    doc: |
      Memory budget in MiB for the whole sort (--max-memory, shared by the
      threads), also the RAM asked of the runner.
    inputBinding:
      prefix: --max-memory
      valueFrom: $(self)M
      position: 2
  sort_by_name:
    type: boolean
    default: false
    doc: Sort by read name in natural order (-n) instead of by coordinate.
    inputBinding:
      prefix: -n
      position: 3
  reference:
    type: File?
    secondaryFiles:
      - pattern: .fai
        required: false
    doc: Reference FASTA for CRAM input or output (--reference).
    inputBinding:
      prefix: --reference
      position: 4
  extra_options:
    type: string[]?
    doc: |
      Other rocksort options, one word per item, e.g. ["--write-index"] or
      ["-l", "9"].  Not -m: it cannot be combined with --max-memory.
    inputBinding:
      position: 5

arguments:
  - prefix: -T
    valueFrom: $(runtime.tmpdir)
    position: 6

outputs:
  sorted:
    type: File
    doc: The sorted alignments, plus their index when --write-index was given.
    outputBinding:
      glob: $(inputs.output_name)
    secondaryFiles:
      - pattern: .csi
        required: false
      - pattern: .crai
        required: false
  log:
    type: stderr
    doc: What rocksort printed on standard error (warnings; statistics with -v).

stderr: rocksort.log
