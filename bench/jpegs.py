"""Hand-written JPEG files of one flat colour, in the coding modes OpenCV cannot write.

`bench chaos` sends frames coded the ways a camera or an attacker might: 12-bit samples (SOF1),
lossless (SOF3), arithmetic coding (SOF9), four CMYK components with an Adobe marker. OpenCV
writes none of them and the benchmark may not depend on other tools, so they are written here
from ITU-T T.81. A flat image keeps each mode's coder small: every 8x8 block has one DC value and
no AC coefficients (lossless: every sample predicted exactly), so the entropy-coded data is a
first difference followed by zeros. The tests decode what OpenCV can decode and compare it with
the colour written, which checks every coder end to end.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

SOI, EOI = b"\xff\xd8", b"\xff\xd9"
SOF_BASELINE, SOF_EXTENDED, SOF_LOSSLESS, SOF_ARITHMETIC = 0xC0, 0xC1, 0xC3, 0xC9
DQT, DHT, SOS, APP14 = 0xDB, 0xC4, 0xDA, 0xEE
# Huffman tables of this module: every DC (or lossless) category coded on 5 bits, and an AC table
# holding only end-of-block, coded "0".
CATEGORY_CODE_BITS = 5


def segment(marker: int, payload: bytes) -> bytes:
    return bytes([0xFF, marker]) + struct.pack(">H", len(payload) + 2) + payload


def sof(marker: int, precision: int, width: int, height: int, components: int) -> bytes:
    """A Start-Of-Frame segment (no subsampling; component i uses quantisation table 0)."""
    specs = b"".join(bytes([i + 1, 0x11, 0]) for i in range(components))
    return segment(
        marker, bytes([precision]) + struct.pack(">HH", height, width) + bytes([components]) + specs
    )


class BitWriter:
    """Huffman-coded data, most significant bit first, with 0xFF byte stuffing."""

    def __init__(self) -> None:
        self._out = bytearray()
        self._byte = 0
        self._bits = 0

    def put(self, value: int, length: int) -> None:
        for shift in range(length - 1, -1, -1):
            self._byte = (self._byte << 1) | ((value >> shift) & 1)
            self._bits += 1
            if self._bits == 8:
                self._out.append(self._byte)
                if self._byte == 0xFF:
                    self._out.append(0)
                self._byte = self._bits = 0

    def finish(self) -> bytes:
        if self._bits:
            self.put((1 << (8 - self._bits)) - 1, 8 - self._bits)  # pad with 1-bits
        return bytes(self._out)


def category(value: int) -> int:
    return abs(value).bit_length()


def put_difference(bits: BitWriter, difference: int) -> None:
    """A DC (or lossless) difference: its category's code, then its magnitude bits."""
    size = category(difference)
    bits.put(size, CATEGORY_CODE_BITS)
    if size and size < 16:
        bits.put(difference if difference >= 0 else difference + (1 << size) - 1, size)


def huffman_table(table_class: int, symbols: Sequence[int], length: int) -> bytes:
    counts = [0] * 16
    counts[length - 1] = len(symbols)
    return segment(DHT, bytes([table_class << 4]) + bytes(counts) + bytes(symbols))


def quantisation_table(precision: int) -> bytes:
    """All ones: a block's DC coefficient is written as it is."""
    if precision == 8:
        return segment(DQT, b"\x00" + b"\x01" * 64)
    return segment(DQT, b"\x10" + b"\x00\x01" * 64)  # 16-bit entries


def scan_header(components: int, lossless: bool = False) -> bytes:
    specs = b"".join(bytes([i + 1, 0x00]) for i in range(components))
    spectral = bytes([1, 0, 0]) if lossless else bytes([0, 63, 0])  # lossless: predictor 1
    return segment(SOS, bytes([components]) + specs + spectral)


def blocks(width: int, height: int) -> int:
    return -(-width // 8) * -(-height // 8)


def dc_value(sample: int, precision: int) -> int:
    """The DC coefficient of an 8x8 block of `sample`: 8 x the level-shifted value."""
    return 8 * (sample - (1 << (precision - 1)))


def flat_huffman(
    width: int, height: int, samples: Sequence[int], precision: int = 8, marker: int = SOF_BASELINE
) -> bytes:
    """A sequential Huffman-coded JPEG (SOF0, or SOF1 for 12-bit samples) of flat components."""
    head = SOI + quantisation_table(precision) + sof(marker, precision, width, height, len(samples))
    head += huffman_table(0, range(16), CATEGORY_CODE_BITS) + huffman_table(1, [0x00], 1)
    bits = BitWriter()
    previous = [0] * len(samples)
    for _ in range(blocks(width, height)):  # interleaved: one block of each component per MCU
        for index, sample in enumerate(samples):
            dc = dc_value(sample, precision)
            put_difference(bits, dc - previous[index])
            previous[index] = dc
            bits.put(0, 1)  # end of block
    return head + scan_header(len(samples)) + bits.finish() + EOI


def flat_cmyk(width: int, height: int, cmyk: Sequence[int]) -> bytes:
    """Four components with an Adobe marker (transform 0): CMYK as Photoshop writes it (inverted)."""
    adobe = segment(APP14, b"Adobe" + struct.pack(">HHHB", 100, 0, 0, 0))
    return SOI + adobe + flat_huffman(width, height, [255 - value for value in cmyk])[2:]


def flat_lossless(width: int, height: int, sample: int, precision: int = 8) -> bytes:
    """A lossless (SOF3) greyscale JPEG, predictor 1: the first sample differs from 2^(P-1), no other."""
    head = SOI + sof(SOF_LOSSLESS, precision, width, height, 1)
    head += huffman_table(0, range(17), CATEGORY_CODE_BITS)
    bits = BitWriter()
    put_difference(bits, sample - (1 << (precision - 1)))
    for _ in range(width * height - 1):
        bits.put(0, CATEGORY_CODE_BITS)
    return head + scan_header(1, lossless=True) + bits.finish() + EOI


# T.81 Table D.2, the probability estimation state machine: per state, Qe, the next state after a
# less probable symbol (LPS), after a more probable one (MPS), and whether an LPS swaps the MPS.
QE = (
    0x5A1D, 0x2586, 0x1114, 0x080B, 0x03D8, 0x01DA, 0x00E5, 0x006F, 0x0036, 0x001A, 0x000D, 0x0006,
    0x0003, 0x0001, 0x5A7F, 0x3F25, 0x2CF2, 0x207C, 0x17B9, 0x1182, 0x0CEF, 0x09A1, 0x072F, 0x055C,
    0x0406, 0x0303, 0x0240, 0x01B1, 0x0144, 0x00F5, 0x00B7, 0x008A, 0x0068, 0x004E, 0x003B, 0x002C,
    0x5AE1, 0x484C, 0x3A0D, 0x2EF1, 0x261F, 0x1F33, 0x19A8, 0x1518, 0x1177, 0x0E74, 0x0BFB, 0x09F8,
    0x0861, 0x0706, 0x05CD, 0x04DE, 0x040F, 0x0363, 0x02D4, 0x025C, 0x01F8, 0x01A4, 0x0160, 0x0125,
    0x00F6, 0x00CB, 0x00AB, 0x008F, 0x5B12, 0x4D04, 0x412C, 0x37D8, 0x2FE8, 0x293C, 0x2379, 0x1EDF,
    0x1AA9, 0x174E, 0x1424, 0x119C, 0x0F6B, 0x0D51, 0x0BB6, 0x0A40, 0x5832, 0x4D1C, 0x438E, 0x3BDD,
    0x34EE, 0x2EAE, 0x299A, 0x2516, 0x5570, 0x4CA9, 0x44D9, 0x3E22, 0x3824, 0x32B4, 0x2E17, 0x56A8,
    0x4F46, 0x47E5, 0x41CF, 0x3C3D, 0x375E, 0x5231, 0x4C0F, 0x4639, 0x415E, 0x5627, 0x50E7, 0x4B85,
    0x5597, 0x504F, 0x5A10, 0x5522, 0x59EB,
)  # fmt: skip
NEXT_LPS = (
    1, 14, 16, 18, 20, 23, 25, 28, 30, 33, 35, 9, 10, 12, 15, 36, 38, 39, 40, 42, 43, 45, 46, 48,
    49, 51, 52, 54, 56, 57, 59, 60, 62, 63, 32, 33, 37, 64, 65, 67, 68, 69, 70, 72, 73, 74, 75, 77,
    78, 79, 48, 50, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 61, 61, 65, 80, 81, 82, 83, 84, 86, 87,
    87, 72, 72, 74, 74, 75, 77, 77, 80, 88, 89, 90, 91, 92, 93, 86, 88, 95, 96, 97, 99, 99, 93, 95,
    101, 102, 103, 104, 99, 105, 106, 107, 103, 105, 108, 109, 110, 111, 110, 112, 112,
)  # fmt: skip
SWITCH_STATES = frozenset({0, 14, 36, 64, 80, 88, 95, 105, 110, 112})


def next_mps(state: int) -> int:
    """T.81 Table D.2's next state after an MPS: the following one, except at the ends of runs."""
    return {
        13: 13,
        35: 9,
        63: 32,
        79: 48,
        87: 71,
        94: 86,
        100: 93,
        104: 99,
        107: 103,
        109: 107,
        111: 109,
        112: 111,
    }.get(state, state + 1)


class ArithmeticEncoder:
    """T.81 Annex D's binary arithmetic coder. The code register is a Python integer that never
    overflows, so carries propagate by themselves; bytes are cut from it and stuffed at the end."""

    def __init__(self) -> None:
        self.low = 0  # C
        self.range = 0x10000  # A
        self.shifts = 0
        self.states: dict[int, tuple[int, int]] = {}  # context -> (state index, MPS)

    def encode(self, context: int, decision: int) -> None:
        state, mps = self.states.get(context, (0, 0))
        qe = QE[state]
        self.range -= qe
        if decision != mps:  # LPS, with the conditional exchange of D.1.4
            if self.range >= qe:
                self.low += self.range
                self.range = qe
            if state in SWITCH_STATES:
                mps = 1 - mps
            state = NEXT_LPS[state]
        else:
            if self.range >= 0x8000:
                self.states[context] = (state, mps)
                return
            if self.range < qe:
                self.low += self.range
                self.range = qe
            state = next_mps(state)
        self.states[context] = (state, mps)
        while self.range < 0x8000:  # RENORME
            self.range <<= 1
            self.low <<= 1
            self.shifts += 1

    def finish(self) -> bytes:
        """FLUSH (D.1.8): the value in [C, C + A) with the most trailing zeros, then the bytes of
        C as a binary fraction (the first byte holds 2^-1..2^-8), stuffed, trailing zeros dropped."""
        value = (self.low + self.range - 1) & ~0xFFFF
        if value < self.low:
            value += 0x8000
        total_bits = self.shifts + 16
        length = -(-total_bits // 8)
        raw = (value << (8 * length - total_bits)).to_bytes(length + 1, "big")
        if raw[0]:
            raise AssertionError("carry out of the first byte")
        data = raw[1:].rstrip(b"\x00")
        return data.replace(b"\xff", b"\xff\x00")


def flat_arithmetic(width: int, height: int, sample: int) -> bytes:
    """A sequential arithmetic-coded (SOF9) greyscale JPEG, default conditioning (no DAC segment).

    DC (F.1.4.1): a zero decision in the context of the previous difference's class, else sign,
    magnitude category in the X contexts and magnitude bits in the matching M context. AC
    (F.1.4.2): every block ends at once, an end-of-block decision in the first AC context.
    """
    dc_zero = {
        "zero": 0,
        "small_positive": 4,
        "small_negative": 8,
        "large_positive": 12,
        "large_negative": 16,
    }
    ac_base = 1000  # AC statistics apart from DC ones
    coder = ArithmeticEncoder()
    context, previous = dc_zero["zero"], 0
    for _ in range(blocks(width, height)):
        dc = dc_value(sample, 8)
        difference, previous = dc - previous, dc
        if difference == 0:
            coder.encode(context, 0)
            context = dc_zero["zero"]
        else:
            coder.encode(context, 1)
            positive = difference > 0
            coder.encode(context + 1, 0 if positive else 1)
            magnitude = abs(difference) - 1
            statistic = context + (2 if positive else 3)
            top = 0
            if magnitude:
                coder.encode(statistic, 1)
                top, statistic = 1, 20
                rest = magnitude >> 1
                while rest:
                    coder.encode(statistic, 1)
                    top <<= 1
                    statistic += 1
                    rest >>= 1
            coder.encode(statistic, 0)
            # Conditioning (L=0, U=1): a magnitude category above 1 is large.
            kind = "large" if top > 1 else "small"
            context = dc_zero[f"{kind}_{'positive' if positive else 'negative'}"]
            statistic += 14
            while top > 1:
                top >>= 1
                coder.encode(statistic, 1 if magnitude & top else 0)
        coder.encode(ac_base, 1)  # end of block at k = 1
    head = SOI + quantisation_table(8) + sof(SOF_ARITHMETIC, 8, width, height, 1) + scan_header(1)
    return head + coder.finish() + EOI
