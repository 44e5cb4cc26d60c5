"""Accel-Sim option files, cache strings and known options, checked on the simulator's own
tested configs (tests/data/accelsim, see PROVENANCE.md there) and on the parser's edge cases."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gpumem_accelsim.cachestring import (
    REQUIRED_CACHE_OPTIONS,
    CacheString,
    CacheStringError,
    check_required,
)
from gpumem_accelsim.known_options import (
    PARSER_BUILTINS,
    VERSIONS,
    known_options,
    provenance,
    registered_options,
    unknown_options,
)
from gpumem_accelsim.options import (
    OptionFile,
    OptionFileError,
    parse_bool,
    parse_float,
    parse_number,
)

DATA = Path(__file__).parent / "data" / "accelsim"
CONFIGS_4X = [
    "SM2_GTX480/gpgpusim.config",
    "SM3_KEPLER_TITAN/gpgpusim.config",
    "SM7_QV100/gpgpusim.config",
    "SM7_QV100/trace.config",
    "SM90_H100/gpgpusim.config",
]
CONFIG_3X = "GTX750Ti-deprecated-3x-syntax.config"
ALL = [*CONFIGS_4X, CONFIG_3X]
OLD, NEW = "accelsim-dev-2024-10", "gpgpusim-upstream-h100"
CACHE_OPTION = re.compile(r"-gpgpu_(cache|tex_cache|const_cache):(?!dl2_texture_only$)")


def load(name: str) -> OptionFile:
    return OptionFile.load(DATA / name)


def cache_options(of: OptionFile) -> dict[str, str]:
    return {n: v for n, v in of.items() if CACHE_OPTION.match(n) and v != "none"}


def test_data_files_and_their_licence_are_here():
    assert (DATA / "COPYRIGHT-gpgpu-sim").read_text().startswith("Copyright (c) 2009-2011")
    provenance_md = (DATA / "PROVENANCE.md").read_text()
    for name in ALL:
        assert (DATA / name).is_file()
        assert name in provenance_md


# ---- option files: the real ones ---------------------------------------------------------

@pytest.mark.parametrize("name", ALL)
def test_every_real_file_parses(name):
    of = load(name)
    assert len(of) > 10
    text = (DATA / name).read_text()
    # every option line of the file (comments cut) is an option we hold
    names = set(re.findall(r"(?m)^(-[A-Za-z_]\S*)", re.sub(r"#.*", "", text)))
    assert names == set(of)


def test_real_values_read_as_the_simulator_reads_them():
    gtx = load("SM2_GTX480/gpgpusim.config")
    assert gtx["-gpgpu_n_clusters"] == "15" and gtx.int("-gpgpu_n_clusters") == 15
    assert gtx["-gpgpu_clock_domains"] == "700.0:700.0:700.0:924.0"
    assert gtx.int("-dram_data_command_freq_ratio") == 4  # "4  # GDDR5 is QDR"
    assert gtx.bool("-gpgpu_flush_l1_cache") is True
    assert gtx["-gpgpu_mem_addr_mapping"].startswith("dramid@8;00000000.")
    assert gtx.location("-gpgpu_n_mem") == (str(DATA / "SM2_GTX480/gpgpusim.config"), 21)
    h100 = load("SM90_H100/gpgpusim.config")
    assert h100.int("-gpgpu_kernel_launch_latency") == 3000  # two spaces before the value
    assert h100.int("-gpgpu_memory_partition_indexing") == 6
    qv = load("SM7_QV100/trace.config")
    assert qv["-specialized_unit_1"] == "1,4,4,4,4,BRA"


def test_quoted_multiline_value_gtx480_dram_timing():
    of = load("SM2_GTX480/gpgpusim.config")
    assert of["-gpgpu_dram_timing_opt"] == (
        "nbk=16:CCD=2:RRD=6:RCD=12:RAS=28:RP=12:RC=40: CL=12:WL=4:CDLR=5:WR=12:nbkgrp=4:CCDL=3:"
        "RTPL=2")
    assert of.location("-gpgpu_dram_timing_opt")[1] == 130  # the line the quote opens on
    # the commented-out multi-line timing of the QV100 stays a comment, the live one counts
    qv = load("SM7_QV100/gpgpusim.config")
    assert "RRD=3:RCD=12" in qv["-gpgpu_dram_timing_opt"]


@pytest.mark.parametrize("name", ALL)
def test_parse_dumps_parse_keeps_every_option_and_value(name):
    of = load(name)
    text = of.dumps()
    again = OptionFile.parse(text, "dumped")
    assert list(again.items()) == list(of.items())
    assert again.dumps() == text


def test_dumps_quotes_what_needs_quotes_and_writes_comments_and_header(tmp_path):
    of = OptionFile({"-a": "x y", "-b": "-looks_like_option", "-c": "", "-d": "-1",
                     "-e": '"starts_with_quote', "-f": "plain", "-g": True, "-h": 8})
    text = of.dumps(comments={"-a": "two words", "-zz": "not in the file"},
                    header="written by gpumem\n\nsecond line")
    assert text.splitlines() == [
        "# written by gpumem", "#", "# second line", "",
        '-a "x y"  # two words', '-b "-looks_like_option"', '-c ""', "-d -1",
        '-e ""starts_with_quote"', "-f plain", "-g 1", "-h 8"]
    assert list(OptionFile.parse(text).items()) == list(of.items())
    of.save(tmp_path / "x.config", header="h")
    assert OptionFile.load(tmp_path / "x.config") == of
    # a comment carries text from a run (a device's name): its newline stays in the comment
    two = of.dumps(comments={"-a": "two\n-b 5"}).splitlines()
    assert '-a "x y"  # two\\x0a-b 5' in two and "-b 5" not in two
    assert OptionFile.parse("\n".join(two)).get("-b") == of.get("-b")


# ---- option files: the parser's rules ----------------------------------------------------

def test_comments_anywhere_even_inside_quotes():
    of = OptionFile.parse('# head\n-a 1 # tail\n-b "x # not part of the value\n  y" #\n-c 3#4')
    assert list(of.items()) == [("-a", "1"), ("-b", "x y"), ("-c", "3")]


def test_last_value_wins_in_first_seen_order():
    of = OptionFile.parse("-a 1\n-b 2\n-a 3\n")
    assert list(of) == ["-a", "-b"] and of["-a"] == "3" and of.location("-a")[1] == 3
    later = OptionFile.parse("-b 20\n-c 30", "B")
    of.update(later)  # like -config A -config B
    assert list(of.items()) == [("-a", "3"), ("-b", "20"), ("-c", "30")]
    assert of.location("-b") == ("B", 1)


def test_bare_bool_flag_means_one_but_negative_numbers_are_values():
    of = OptionFile.parse("-flag\n-n -1\n-x -0.5 -last")
    assert of["-flag"] == "1" and of.bool("-flag") is True
    assert of.int("-n") == -1 and of.float("-x") == -0.5
    assert of["-last"] == "1"  # a flag at the end of the file


@pytest.mark.parametrize("text, value", [
    ("0x1F", 31), ("0x10", 16), ("010", 8), ("0", 0), ("00", 0), ("7", 7), ("-5", -5),
    ("+5", 5), ("100abc", 100), ("12.7", 12), ("0x1fg", 31), ("017junk", 15),
])
def test_number_rules(text, value):
    assert parse_number(text) == value


@pytest.mark.parametrize("text, why", [
    ("08", "not an octal digit"), ("09", "not an octal digit"), ("abc", "does not start"),
    ("", "does not start"), ("0x", "octal"), ("0X10", "octal"), ("0xg", "hexadecimal"),
])
def test_number_errors(text, why):
    with pytest.raises(OptionFileError, match=why):
        parse_number(text, option="-opt")


def test_number_error_from_a_file_names_file_line_and_option():
    of = OptionFile.parse("-a 1\n-gpgpu_n_mem 08\n", "my.config")
    with pytest.raises(OptionFileError) as e:
        of.int("-gpgpu_n_mem")
    assert str(e.value).startswith("my.config:2: cannot parse value '08' for option -gpgpu_n_mem")
    assert e.value.line == 2 and e.value.source == "my.config"


def test_floats_and_bools():
    assert parse_float("0.5") == 0.5 and parse_float("1e3x") == 1000.0
    assert parse_float("0x1.5") == 1.5  # the simulator strips '0x' before a float too
    with pytest.raises(OptionFileError):
        parse_float("x1")
    assert parse_bool("0") is False and parse_bool("1") is True and parse_bool("1abc") is True
    assert parse_bool(True) is True and parse_bool(0) is False
    for bad in ("2", "-1", "yes", ""):
        with pytest.raises(OptionFileError, match="0 or 1"):
            parse_bool(bad)


def test_typed_getters_defaults_and_missing():
    of = OptionFile.parse("-a 5")
    assert of.int("-nope", 7) == 7 and of.bool("-nope", False) is False
    assert of.float("-nope", 1.5) == 1.5 and of.get("-nope") is None
    with pytest.raises(KeyError):
        of.int("-nope")
    with pytest.raises(KeyError):
        of["-nope"]
    assert "-a" in of and "-nope" not in of and len(of) == 1
    of.remove("-a")
    assert len(of) == 0


@pytest.mark.parametrize("text, line, what", [
    ("5\n-a 1", 1, "stray value '5': there is no option before it"),
    ("-a 1\n\n-b 1 2", 3, "stray value '2': option -b already took '1'"),
    ("-a 1\n\"q\" x", 2, "stray quoted value 'q'"),
    ("-a 1\n-b \"x y\n-c 2\n", 2, "unterminated quote"),
    ("-a \"x # comment hides the closing quote\"\n", 1, "unterminated quote"),
    ("-a \" x\"", 1, "a lone '\"'"),
])
def test_malformed_input_raises_with_the_line(text, line, what):
    with pytest.raises(OptionFileError) as e:
        OptionFile.parse(text, "bad.config")
    assert e.value.line == line
    assert str(e.value).startswith(f"bad.config:{line}: ")
    assert what in str(e.value)


@pytest.mark.parametrize("name, value, what", [
    ("-a", "x#y", "'#' starts a comment"),
    ("-a", "x\ty", "reads back"),
    ("-a", "x  y", "reads back"),
    ("-a", ' x', "reads back"),
    ("-a", 'a" b', "reads back"),
    ("a", "1", "not an option name"),
    ("-1", "1", "not an option name"),
    ("-a b", "1", "not an option name"),
])
def test_setting_a_value_that_cannot_be_written_fails_now(name, value, what):
    of = OptionFile()
    with pytest.raises(OptionFileError, match=re.escape(what)):
        of[name] = value
    assert len(of) == 0


def test_set_values_are_strings_and_round_trip():
    of = OptionFile()
    of["-n"] = 40
    of["-f"] = False
    of["-clock"] = 1980.0
    of["-t"] = "trailing space kept "  # a quoted value may end in a space (a lone closing ")
    assert of["-n"] == "40" and of["-f"] == "0" and of["-clock"] == "1980.0"
    assert OptionFile.parse(of.dumps()) == of
    assert of.location("-n") == (None, None)
    with pytest.raises(TypeError):
        of["-x"] = [1]


# ---- cache strings ----------------------------------------------------------------------

@pytest.mark.parametrize("name", CONFIGS_4X)
def test_every_real_cache_string_parses_and_formats_back(name):
    of = load(name)
    for option, value in cache_options(of).items():
        c = of.cache(option)
        assert isinstance(c, CacheString) and c.format() == value == str(c)
        assert CacheString.parse(c.format()) == c


def test_real_cache_strings_mean_what_the_doc_says():
    qv = load("SM7_QV100/gpgpusim.config")
    l1, l2 = qv.cache("-gpgpu_cache:dl1"), qv.cache("-gpgpu_cache:dl2")
    assert (l1.kind, l1.sets, l1.line, l1.assoc, l1.size) == ("S", 4, 128, 64, 32 * 1024)
    assert (l1.write, l1.alloc, l1.write_alloc, l1.set_index) == ("T", "m", "L", "L")
    assert (l1.mshr, l1.mshr_entries, l1.mshr_merge, l1.miss_queue) == ("A", 512, 8, 16)
    assert (l1.result_fifo, l1.data_port) == (0, 32)
    assert l2.size * 32 * 2 == 6 * 1024 * 1024  # per sub-partition x n_mem x subs per channel
    tex = qv.cache("-gpgpu_tex_cache:l1")
    assert (tex.mshr, tex.result_fifo, tex.data_port) == ("T", 2, None)
    h100 = load("SM90_H100/gpgpusim.config").cache("-gpgpu_cache:dl2")
    assert h100.size * 40 * 2 == 50 * 1024 * 1024 and h100.set_index == "X"
    assert OptionFile.parse("-gpgpu_cache:dl1 none").cache("-gpgpu_cache:dl1") is None


def test_3x_cache_strings_are_rejected_with_the_reason():
    of = load(CONFIG_3X)
    values = cache_options(of)
    assert len(values) == 5
    for option in values:
        with pytest.raises(CacheStringError) as e:
            of.cache(option)
        msg = str(e.value)
        assert "GPGPU-Sim 3.x syntax" in msg and "'N:' (normal) or 'S:' (sectored)" in msg
        assert msg.startswith(f"{DATA / CONFIG_3X}:") and option in msg
        assert "\n" not in msg
    with pytest.raises(CacheStringError, match="3.x"):
        CacheString.parse("32:128:4,L:L:m:N:H,A:32:8,8")


GOOD = "N:32:128:4,L:L:m:N:L,A:64:8,8"


@pytest.mark.parametrize("text, rule", [
    # fields and their letters
    ("N:32:128:4,L:L:m:N:L,A:64", "field 12 (mshr_merge) is missing or malformed"),
    ("N:32:128:4,L:L:m:N:L", "needs at least 12 fields"),
    ("N:32:128:4,L:L:m:N:L,A:64:8", "field 13 (miss_queue) is missing"),
    ("N:32:128:4,L:L:m:N:L,A:64:8,8 ", "unexpected ' ' after field 13"),
    ("N:32:128:4,L:L:m:N:L,A:64:8,8:0,32,7", "unexpected ',7' after field 15"),
    ("Q:32:128:4,L:L:m:N:L,A:64:8,8", "field 1 (kind) is 'Q'"),
    ("N:32:128:4,R:L:m:N:L,A:64:8,8", "field 5 (replacement) is 'R'"),
    ("N:32:128:4,L:Z:m:N:L,A:64:8,8", "field 6 (write) is 'Z'"),
    ("N:32:128:4,L:L:x:N:L,A:64:8,8", "field 7 (alloc) is 'x'"),
    ("N:32:128:4,L:L:m:Q:L,A:64:8,8", "field 8 (write_alloc) is 'Q'"),
    ("N:32:128:4,L:L:m:N:Q,A:64:8,8", "field 9 (set_index) is 'Q'"),
    ("N:32:128:4,L:L:m:N:L,Q:64:8,8", "field 10 (mshr) is 'Q'"),
    ("N:32:-128:4,L:L:m:N:L,A:64:8,8", "field 3 (line) is missing or malformed"),
    ("none", "'none' means no cache"),
    # the validity rules
    ("N:48:128:4,L:L:m:N:L,A:64:8,8", "sets is 48: must be a power of two"),
    ("N:32:100:4,L:L:m:N:L,A:64:8,8", "line is 100: must be a power of two"),
    ("N:32:128:0,L:L:m:N:L,A:64:8,8", "at least one way"),
    ("S:32:64:4,L:L:m:N:L,A:64:8,8", "a sectored cache ('S') needs a 128-byte line"),
    ("N:32:128:4,L:B:f:N:L,A:64:8,8", "alloc 'f' (on fill) with write 'B' (write-back)"),
    ("N:32:128:4,L:B:s:N:L,A:64:8,8", "alloc 's' (streaming) with write 'B' (write-back)"),
    ("N:32:128:4,L:T:f:F:L,A:64:8,8", "write_alloc 'F' (fetch-on-write) needs alloc 'm'"),
    ("N:32:128:4,L:T:s:L:L,A:64:8,8", "write_alloc 'L' (lazy-fetch-on-read) needs alloc 'm'"),
    ("N:32:128:4,L:R:m:N:L,F:64:8,8", "mshr 'F' (texture FIFO) needs exactly 14 fields"),
    ("N:32:128:4,L:R:m:N:L,T:64:8,8:2,0", "mshr 'T' (sector texture FIFO) needs exactly 14"),
    ("N:32:128:4,L:L:m:N:L,A:64:8,8:0,48", "data_port is 48: must divide the line (128)"),
    ("N:32:128:4,L:L:m:N:L,A:64:8,8:0,256", "data_port is 256: must divide the line (128)"),
    ("N:16:128:4,L:L:m:N:H,A:64:8,8", "'H' (Fermi hash) works only with 32 or 64 sets"),
    ("N:128:128:4,L:L:m:N:P,A:64:8,8", "'P' (IPOLY hash) works only with 16 or 32 or 64"),
    ("N:32:128:4,L:L:m:N:C,A:64:8,8", "sends every access to set 0"),
])
def test_each_cache_rule_violated_once(text, rule):
    assert CacheString.parse(GOOD).format() == GOOD
    with pytest.raises(CacheStringError) as e:
        CacheString.parse(text)
    msg = str(e.value)
    assert msg.startswith(f"cache string {text!r}: ") and rule in msg and "\n" not in msg


@pytest.mark.parametrize("text", [
    "N:64:128:4,L:L:m:N:H,A:64:8,8", "N:16:128:4,L:L:m:N:P,A:64:8,8",
    "N:32:128:4,L:R:m:N:L,F:64:8,8:2", "N:32:128:4,L:L:m:N:L,A:64:8,8:0,0",
    "N:32:128:4,L:L:m:N:L,A:64:8,8:4", "S:1:128:1,F:E:m:W:X,S:1:1,1:1,128",
    "N:32:128:4,L:T:s:N:L,A:64:8,8",
])
def test_cache_strings_at_the_edge_of_the_rules_pass(text):
    assert CacheString.parse(text).format() == text


def test_cache_string_built_in_code_is_checked_too():
    c = CacheString.parse(GOOD)
    assert c.size == 32 * 128 * 4
    with pytest.raises(CacheStringError, match="power of two"):
        CacheString("N", 3, 128, 4, "L", "L", "m", "N", "L", "A", 64, 8, 8)
    with pytest.raises(CacheStringError, match="needs field 14"):
        CacheString("N", 32, 128, 4, "L", "L", "m", "N", "L", "A", 64, 8, 8, None, 32)
    with pytest.raises(CacheStringError, match="integer >= 0"):
        CacheString("N", 32, 128, 4, "L", "L", "m", "N", "L", "A", -1, 8, 8)


def test_required_cache_options():
    for name in CONFIGS_4X[:3] + CONFIGS_4X[4:]:
        assert check_required(load(name)) == []
    of = load("SM7_QV100/gpgpusim.config")
    of.remove("-gpgpu_tex_cache:l1")
    assert check_required(of) == ["-gpgpu_tex_cache:l1"]
    assert check_required(OptionFile()) == list(REQUIRED_CACHE_OPTIONS)
    assert check_required(load("SM7_QV100/trace.config")) == list(REQUIRED_CACHE_OPTIONS)


# ---- known options per simulator version ---------------------------------------------------

def test_versions_and_their_lists():
    assert VERSIONS == (OLD, NEW)
    old, new = registered_options(OLD), registered_options(NEW)
    assert len(old) == 237 and len(new) == 251
    assert old < new  # the newer build removes nothing the older one had
    assert new - old == {
        "-SST_mode", "-chiplet_mem_stride", "-chiplet_partition_stride",
        "-gpgpu_chiplet_interleave", "-gpgpu_lrc_enabled", "-gpgpu_lrc_max_entries",
        "-gpgpu_lrc_max_merged", "-gpgpu_n_chiplet_partition", "-gpgpu_opndcoll_model",
        "-gpgpu_simple_dram_clock_multiplier", "-gpgpu_trywait_max_retries",
        "-gpgpu_trywait_retry_cycles", "-inter_chiplet_queue_latency",
        "-inter_chiplet_queue_size"}
    for names in (old, new):
        assert all(re.fullmatch(r"-[A-Za-z_][\w:]*", n) for n in names)
        assert {"-specialized_unit_8", "-trace_opcode_latency_initiation_spec_op_8",
                "-ptx_opcode_latency_tesnor", "-gpgpu_cache:dl1"} <= names
        assert "-specialized_unit_9" not in names and "-gpuwattch_xml_file" not in names
    assert known_options(OLD) == old | PARSER_BUILTINS
    assert "667834cfe5214523edd7769aeab77f91b7137686" in provenance(OLD)
    assert "baf2b8f0390342ff6bab23917d21e40a4780b2fb" in provenance(NEW)
    assert "73f9fac68a1a717750da54d2d867c7524b47b4c3" in provenance(NEW)
    with pytest.raises(ValueError, match="known versions: accelsim-dev-2024-10"):
        known_options("accelsim-4.2")


def test_qv100_is_known_to_the_older_version():
    for name in ("SM7_QV100/gpgpusim.config", "SM7_QV100/trace.config"):
        assert unknown_options(load(name), OLD) == []
        assert unknown_options(load(name), NEW) == []


def test_h100_needs_the_newer_version():
    h100 = load("SM90_H100/gpgpusim.config")
    assert unknown_options(h100, OLD) == [
        "-gpgpu_n_chiplet_partition", "-inter_chiplet_queue_size", "-gpgpu_chiplet_interleave",
        "-gpgpu_opndcoll_model", "-gpgpu_lrc_enabled", "-gpgpu_lrc_max_entries",
        "-gpgpu_lrc_max_merged"]
    assert unknown_options(h100, NEW) == []


def test_stale_names_in_tested_configs_are_found():
    # these tested configs carry names that their own build (667834cf) no longer registers
    assert unknown_options(load("SM2_GTX480/gpgpusim.config"), OLD) == ["-gpuwattch_xml_file"]
    assert unknown_options(load("SM3_KEPLER_TITAN/gpgpusim.config"), OLD) == ["-smem_latency"]
    assert unknown_options(load(CONFIG_3X), NEW) == [
        "-gmem_skip_L1D", "-rop_latency", "-gpuwattch_xml_file"]
    assert unknown_options(OptionFile.parse("-config other.config"), OLD) == []
