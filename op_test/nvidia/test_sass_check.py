"""CPU tests of op_test/sass_check.py on SASS lines taken from real sm90 listings."""

from sass_check import unwritten_uniform_reads

# The miscompiled T = 1 specialisation of atrex_sm90_gdn_state_output_v2 (ptxas 12.8), abridged: UR16 is read
# for the B descriptor of the second HGMMA and written nowhere.
_PTXAS_128_T1 = """
        /*0030*/                   ULDC.64 UR4, c[0x0][0x208] ;
        /*0f90*/                   USGXT.U32 UR8, UR8, 0xe ;
        /*0fa0*/                   UMOV UR9, 0x80000020 ;
        /*0fe0*/                   UMOV UR14, 0xffffffc0 ;
        /*0ff0*/                   UMOV UR15, 0x7fffffdf ;
        /*1030*/                   UIADD3.64 UR14, UR4, -UR14, URZ ;
        /*1a10*/                   HGMMA.64x32x16.F32.BF16 R24, gdesc[UR8].tnspB, R24 ;
        /*1a20*/                   UIADD3 UR10, UP0, UR16, 0x40, URZ ;
        /*1a50*/                   UIADD3.X UR11, UR16, -0x7fffffe0, URZ, UP0, !UPT ;
        /*1aa0*/                   HGMMA.64x32x16.F32.BF16 R24, gdesc[UR8].tnspB, R24 ;
"""


def test_flags_the_ptxas_12_8_t1_miscompile():
    bad = unwritten_uniform_reads(_PTXAS_128_T1)
    assert [(off, regs) for off, _, regs in bad] == [("1a20", [16]), ("1a50", [16])], bad


def test_a_write_anywhere_clears_the_read():
    fixed = _PTXAS_128_T1 + "        /*2000*/                   UMOV UR16, UR8 ;\n"
    assert unwritten_uniform_reads(fixed) == []


def test_register_a_wgmma_reads_only_the_b_descriptor():
    sass = """
        /*0100*/                   UMOV UR14, 0x1 ;
        /*0110*/                   UMOV UR15, 0x2 ;
        /*28f0*/                   HGMMA.64x64x16.F32.BF16 R24, R88, gdesc[UR12], RZ, !UPT ;
"""
    assert unwritten_uniform_reads(sass) == []
    # with A in shared memory the same descriptor operand also needs UR12 and UR13
    smem_a = sass.replace("R88, gdesc", "gdesc")
    assert [regs for _, _, regs in unwritten_uniform_reads(smem_a)] == [[12, 13]]


def test_wide_multiply_add_and_non_uniform_writers():
    sass = """
        /*0bb0*/                   UIMAD.WIDE UR36, UR20, 0x4, UR16 ;
        /*0bd0*/                   ULEA.HI.X.SX32 UR7, UR7, UR37, 0x2, UP1 ;
        /*0c10*/                   REDUX.SUM.S32 UR12, R3 ;
        /*1050*/                   IMAD.U32 R4, R5, UR12, RZ ;
        /*12140*/                  UIMAD.WIDE.U32 UR10, UR13, UR27, URZ ;
"""
    # UR36:UR37 come from the wide multiply-add, UR12 from REDUX and UR7 from the ULEA; the inputs UR20, UR16:UR17,
    # UR13 and UR27 are never written in this fragment (a wide product's 32-bit factors are single registers)
    bad = sorted({r for _, _, regs in unwritten_uniform_reads(sass) for r in regs})
    assert bad == [13, 16, 17, 20, 27], bad
