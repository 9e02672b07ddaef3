"""The sort cases: one input sorted with the same options by rocksort and by
the oracle (samtools 1.24), then the same records, byte for byte and in the
same order, and the same header apart from @PG lines; nothing left in the
temp dir and no other file beside the output (see harness.run_sort_case).

Each SortCase in SORT_CASES is one test, named by its name; a new case is a
new row.  Tests of the command line beyond these are in test/cli.py.
"""

from harness import SAM_OUT, SPILL, Ref, SortCase, both_orders, each, run_sort_case

MIXED_FA = Ref("mixed.fa")
CRAM_REF = ["--reference", MIXED_FA]

SORT_CASES = [
    # Ordering rules, SAM in and SAM out so that a failure reads easily.
    *both_orders("mixed", "mixed.sam", SAM_OUT),
    *both_orders("unmapped", "unmapped.sam", SAM_OUT),
    *both_orders("placed_unmapped_pos_minus1", "placed_unmapped.bam", SAM_OUT),
    *both_orders("ties_stable", "ties.sam", SAM_OUT),
    *both_orders("tricky_names", "names.sam", SAM_OUT),
    *both_orders("tricky_names_spilled", "names_bulk.bam", extra=SPILL),
    # Names of three shapes, spilled: the batches' keys share a long prefix
    # (Illumina), a short one then a number (SRA), or hardly any (UUIDs).
    *[SortCase(f"name_shape_{shape}_spilled{suffix}", f"names_{shape}.bam", [order], SPILL)
      for shape in ("illumina", "sra", "uuid")
      for order, suffix in (("-n", "_name"), ("-N", "_ascii_name"))],
    *both_orders("no_sq_all_unmapped", "nosq.sam", SAM_OUT),
    *both_orders("one_sq", "onesq.sam", SAM_OUT),
    *both_orders("many_sq_5000", "manysq.bam"),
    *both_orders("pos_past_2g", "bigpos.sam", SAM_OUT),
    *both_orders("pos_past_2g_spilled", "bigpos_bulk.sam", SAM_OUT, SPILL),
    *both_orders("long_reads_bam", "longreads.bam"),
    *both_orders("long_reads_spilled", "longreads.bam", extra=SPILL),
    SortCase("long_reads_sam_coord", "longreads.sam", SAM_OUT),
    *both_orders("header_only", "header_only.sam", SAM_OUT),
    *both_orders("header_only_bam", "header_only.bam"),
    *both_orders("no_hd_line", "no_hd.sam", SAM_OUT),
    *both_orders("hd_go_ss_tags", "hd_go_ss.sam", SAM_OUT),
    # Input formats.
    *both_orders("input_bam", "mixed.bam"),
    *both_orders("input_cram", "mixed.cram", CRAM_REF),
    SortCase("input_cram_fmt_option", "mixed.cram",
             ["--input-fmt-option", Ref("mixed.fa", "reference={}")]),
    SortCase("stdin_dash", "mixed.bam", stdin="-"),
    SortCase("stdin_no_argument_name", "mixed.bam", ["-n"], stdin=""),
    SortCase("stdin_cram", "mixed.cram", CRAM_REF, stdin="-"),
    SortCase("stdin_sam_to_stdout_sam", "mixed.sam", SAM_OUT, stdin="-",
             to_stdout=True),
    # Output formats.
    *both_orders("output_sam", "mixed.bam", SAM_OUT),
    *both_orders("output_bam", "mixed.bam", ["-O", "bam"]),
    *both_orders("output_cram", "mixed.bam", ["-O", "cram", *CRAM_REF]),
    SortCase("output_level1", "mixed.bam", ["-l", "1"]),
    SortCase("output_bam_to_stdout", "mixed.bam", to_stdout=True),
    SortCase("output_sam_from_extension", "mixed.bam", out_name="out.sam"),
    SortCase("output_cram_from_extension", "mixed.bam", CRAM_REF,
             out_name="out.cram"),
    SortCase("output_uncompressed_name", "mixed.bam", ["-n", "-u"]),
    SortCase("output_fmt_option_level", "mixed.bam",
             ["--output-fmt-option", "level=2"]),
    # Memory and threads on ~40k records.
    *both_orders("bulk_in_memory", "bulk.bam"),
    *both_orders("bulk_spilled", "bulk.bam", extra=SPILL),
    *both_orders("bulk_spilled_presized", "bulk.bam", extra=[*SPILL, "-s", "50M"]),
    # Batches whose keys share a prefix of a different length each time.
    *both_orders("prefix_shifts_spilled", "prefix_shifts.bam", extra=SPILL),
    SortCase("bulk_memory_in_kilobytes", "bulk.bam", extra=["-m", "700K"]),
    SortCase("bulk_memory_in_gigabytes_name", "bulk.bam", ["-n"], ["-m", "1G"]),
    SortCase("bulk_spilled_default_tmpdir", "bulk.bam", extra=SPILL,
             temp_prefix=False),
    SortCase("bulk_threads0_coord", "bulk.bam", extra=["-@", "0", *SPILL]),
    SortCase("bulk_threads1_name", "bulk.bam", ["-n"], ["-@", "1", *SPILL]),
    SortCase("bulk_threads2_coord", "bulk.bam", extra=["-@", "2", *SPILL,
                                                      "-s", "50M"]),
    SortCase("bulk_threads2_in_memory_name", "bulk.bam", ["-n"], ["-@", "2"]),
    SortCase("bulk_threads4_name", "bulk.bam", ["-n"], ["-@", "4", *SPILL]),
    SortCase("bulk_spilled_stdin_sam_out_name", "bulk.bam", ["-n", *SAM_OUT],
             ["-@", "2", *SPILL, "--verbosity", "1"], stdin="-"),
    # The other orders of samtools sort: -N, -t TAG (alone, with -n, with -N),
    # --template-coordinate and -M (-K/-R/-H, -I FASTA with -w), each checked
    # against 1.24's output, header included.  Also how 1.24 resolves several
    # order options on one command line (the last wins; -t wins over -M).
    SortCase("ascii_name_tricky", "names.sam", ["-N", *SAM_OUT]),
    SortCase("ascii_name_bulk", "bulk.bam", ["-N"]),
    SortCase("ascii_name_bulk_spilled", "bulk.bam", ["-N"], SPILL),
    SortCase("ascii_name_tricky_spilled", "names_bulk.bam", ["-N"], SPILL),
    SortCase("ascii_name_hd_replaced", "hd_go_ss.sam", ["-N", *SAM_OUT]),
    SortCase("ascii_name_wins_over_later_n", "names.sam", ["-N", "-n", *SAM_OUT]),
    SortCase("tag_int", "tagged.sam", ["-t", "XI", *SAM_OUT]),
    SortCase("tag_int_name", "tagged.sam", ["-t", "XI", "-n", *SAM_OUT]),
    SortCase("tag_int_ascii_name", "tagged.sam", ["-N", "-t", "XI", *SAM_OUT]),
    SortCase("tag_string", "tagged.sam", ["-t", "CB", *SAM_OUT]),
    SortCase("tag_string_name", "tagged.sam", ["-t", "CB", "-n", *SAM_OUT]),
    SortCase("tag_string_ascii_name", "tagged.sam", ["-t", "CB", "-N", *SAM_OUT]),
    SortCase("tag_float", "tagged.sam", ["-t", "XF", *SAM_OUT]),
    SortCase("tag_float_name", "tagged.sam", ["-t", "XF", "-n", *SAM_OUT]),
    SortCase("tag_mixed_types_missing", "tagged.sam", ["-t", "XM", *SAM_OUT]),
    SortCase("tag_mixed_types_name", "tagged.sam", ["-n", "-t", "XM", *SAM_OUT]),
    SortCase("tag_mixed_types_ascii_name", "tagged.sam", ["-t", "XM", "-N", *SAM_OUT]),
    SortCase("tag_mixed_types_bam", "tagged.bam", ["-t", "XM"]),
    SortCase("tag_absent_everywhere", "tagged.sam", ["-t", "ZZ", *SAM_OUT]),
    SortCase("tag_one_letter", "tagged.sam", ["-t", "X", *SAM_OUT]),
    SortCase("tag_read_group", "mixed.sam", ["-t", "RG", *SAM_OUT]),
    SortCase("tag_hd_replaced", "hd_go_ss.sam", ["-t", "XN", *SAM_OUT]),
    SortCase("tag_wins_over_minimiser", "tagged.sam", ["-t", "XI", "-M", *SAM_OUT]),
    SortCase("tag_wins_over_template", "tagged.sam",
             ["--template-coordinate", "-t", "CB", *SAM_OUT]),
    SortCase("tag_int_spilled", "tagged_bulk.bam", ["-t", "XI"], SPILL),
    SortCase("tag_mixed_name_spilled", "tagged_bulk.bam", ["-t", "XM", "-n"], SPILL),
    SortCase("tag_string_ascii_name_spilled", "tagged_bulk.bam", ["-t", "CB", "-N"],
             [*SPILL, "-@", "2"]),
    SortCase("tag_float_spilled", "tagged_bulk.bam", ["-t", "XF"], SPILL),
    SortCase("template_coordinate", "templates.sam", ["--template-coordinate", *SAM_OUT]),
    SortCase("template_coordinate_bam", "templates.bam", ["--template-coordinate"]),
    SortCase("template_coordinate_spilled", "templates_bulk.bam",
             ["--template-coordinate"], SPILL),
    SortCase("template_coordinate_spilled_threads", "templates_bulk.bam",
             ["--template-coordinate"], [*SPILL, "-@", "2"]),
    SortCase("template_coordinate_single_end_hd", "hd_go_ss.sam",
             ["--template-coordinate", *SAM_OUT]),
    SortCase("template_coordinate_no_hd", "no_hd.sam", ["--template-coordinate", *SAM_OUT]),
    SortCase("template_coordinate_then_n", "templates.sam",
             ["--template-coordinate", "-n", *SAM_OUT]),
    # Single-cell style: ends that tie, so library (read groups given twice,
    # RG typed Z, H or i), cell barcode (missing, empty, prefixes, past 0x7f,
    # H) and MI decide; the same fields under -t.
    SortCase("template_coordinate_cells", "templates_cells.sam",
             ["--template-coordinate", *SAM_OUT]),
    SortCase("template_coordinate_cells_bam_threads", "templates_cells.bam",
             ["--template-coordinate"], ["-@", "2"]),
    SortCase("tag_cell_barcode_types", "templates_cells.sam", ["-t", "CB", *SAM_OUT]),
    SortCase("tag_read_group_types_name", "templates_cells.sam", ["-t", "RG", "-n", *SAM_OUT]),
    SortCase("tag_molecule_id_ascii_name", "templates.sam", ["-t", "MI", "-N", *SAM_OUT]),
    SortCase("minimiser", "minimiser.sam", ["-M", *SAM_OUT]),
    SortCase("minimiser_kmer_squash", "minimiser.sam", ["-M", "-K", "13", "-H", *SAM_OUT]),
    SortCase("minimiser_forward_only", "minimiser.sam", ["-M", "-R", "-K", "25", *SAM_OUT]),
    SortCase("minimiser_kmer_clamped_low", "minimiser.sam", ["-M", "-K", "0", *SAM_OUT]),
    SortCase("minimiser_kmer_clamped_high", "minimiser.sam", ["-M", "-K", "99", *SAM_OUT]),
    SortCase("minimiser_unplaced_only", "minimiser_unplaced.sam", ["-M", *SAM_OUT]),
    SortCase("minimiser_header_only", "header_only.sam", ["-M", *SAM_OUT]),
    SortCase("minimiser_index", "minimiser.sam", ["-I", MIXED_FA, *SAM_OUT]),
    SortCase("minimiser_index_window", "minimiser.sam",
             ["-M", "-I", MIXED_FA, "-w", "40", "-K", "15", *SAM_OUT]),
    # -w at or below -K, and 0: windows shorter than a k-mer.
    SortCase("minimiser_index_window_below_kmer", "minimiser.sam",
             ["-I", MIXED_FA, "-w", "5", "-K", "15", *SAM_OUT]),
    SortCase("minimiser_index_window_zero", "minimiser.sam", ["-I", MIXED_FA, "-w", "0", *SAM_OUT]),
    SortCase("minimiser_index_squash_forward", "minimiser.sam",
             ["-I", MIXED_FA, "-H", "-R", *SAM_OUT]),
    SortCase("minimiser_bam_threads", "minimiser.bam", ["-M"], ["-@", "2"]),
    SortCase("minimiser_spilled", "minimiser_bulk.bam", ["-M"], SPILL),
    SortCase("minimiser_index_spilled", "minimiser_bulk.bam", ["-I", MIXED_FA, "-K", "17"],
             SPILL),
    SortCase("minimiser_then_n", "minimiser.sam", ["-M", "-n", *SAM_OUT]),
    SortCase("n_then_minimiser", "minimiser.sam", ["-n", "-M", *SAM_OUT]),
    SortCase("index_then_n", "minimiser.sam", ["-I", MIXED_FA, "-n", *SAM_OUT]),
]


@each((sc.name, sc) for sc in SORT_CASES)
def test_sort_case(case, sc):
    run_sort_case(case, sc)
