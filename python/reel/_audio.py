# _audio.py: a video's audio in sync with its frames (reel/audio.h):
# AudioSamples, the audio settings as the decoder takes them, and the
# window of a clip's frames, and the open audio object (reel._reel.audio_open)
# the decoder keeps. The samples come from C.
from __future__ import annotations

import os
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Dict, Optional, Sequence, Tuple, Union

from . import _reel
from ._reel import Frames

_MISSING = {"raise": 0, "zeros": 1}


@dataclass(frozen=True)
class AudioSettings:
    """What VideoDecoder(audio=...) asks for: the output rate (None: the
    stream's), channels (None: the stream's; 1: their mean), what a
    video without audio gives ("raise" or "zeros"), and the bytes of decoded
    samples kept so that windows in any order decode once (None: C's
    default, 8 MiB; 0: none)."""

    sample_rate: Optional[int] = None
    channels: Optional[int] = None
    missing: str = "raise"
    cache_bytes: Optional[int] = None

    @classmethod
    def of(cls, audio: Union[bool, Dict[str, Any], None]) -> Optional["AudioSettings"]:
        if audio is None or audio is False:
            return None
        if audio is True:
            return cls()
        if not isinstance(audio, dict):
            raise TypeError(f"audio must be True, False, None or a dict, not {type(audio).__name__}")
        unknown = set(audio) - {"sample_rate", "channels", "missing", "cache_bytes"}
        if unknown:
            raise ValueError(f"unknown audio setting(s) {sorted(unknown)}: sample_rate, channels, missing, "
                             "cache_bytes")
        s = cls(audio.get("sample_rate"), audio.get("channels"), audio.get("missing", "raise"),
                audio.get("cache_bytes"))
        if s.missing not in _MISSING:
            raise ValueError(f"audio missing={s.missing!r}: 'raise' or 'zeros'")
        return s

    def args(self) -> Tuple[int, int, int]:
        """(sample_rate, channels, missing) as C takes them (0: native)."""
        return (int(self.sample_rate or 0), int(self.channels or 0), _MISSING[self.missing])


@dataclass(frozen=True)
class AudioSamples:
    """The audio played over a window of the video's timeline.

    data: float32 [channels, samples] (zero-copy: torch.from_dlpack(data),
    numpy.asarray(data)). first_sample: the window's first sample on the
    grid anchored at the audio's first sample a0 (s(t) = floor((t - a0) *
    rate + 1/2)); pts_seconds: its time. valid: (lo, hi), the part of the
    window that came from the stream (the rest is zeros). window: (t0, t1)
    in seconds.

    Damage (``corrupt_policy="skip"``: a packet the codec rejects is
    dropped, its samples zeros, as the ffmpeg CLI's
    ``aresample=async=1:min_hard_comp=0`` gives): ``missing`` samples of the
    window stand for dropped packets, all inside ``missing_span`` (lo, hi)
    (exactly it when ``missing == hi - lo``); ``corrupt_packets`` counts
    those packets; ``valid`` narrows to the longest run of stream samples
    without a missing one. Without damage: 0, (0, 0), 0."""

    data: Frames
    sample_rate: int
    first_sample: int
    pts_seconds: float
    valid: Tuple[int, int]
    window: Tuple[float, float]
    missing: int = 0
    missing_span: Tuple[int, int] = (0, 0)
    corrupt_packets: int = 0

    @property
    def num_samples(self) -> int:
        return int(self.data.shape[1])

    @property
    def num_channels(self) -> int:
        return int(self.data.shape[0])


class Audio:
    """One video's open audio (a file or a URL): its decode goes on from call
    to call, so clips read in order decode once. Reopened in a forked
    process."""

    def __init__(self, path: str, settings: AudioSettings, remote: Optional[Dict[str, Any]], corrupt: int = 0,
                 decoder: Any = None) -> None:
        self._args = (path, settings, remote, corrupt, decoder)
        self._pid = os.getpid()
        rate, channels, missing = settings.args()
        # decoder: the open _reel.Decoder of `path`, whose bytes a URL's audio shares (fetched once for both)
        self.handle = _reel.audio_open(path, sample_rate=rate, channels=channels, missing=missing, remote=remote,
                                       corrupt=corrupt, cache_bytes=settings.cache_bytes, decoder=decoder)
        self.info: Dict[str, Any] = _reel.audio_info(self.handle)

    def samples(self, t0: int, t1: int, time_base: Fraction) -> AudioSamples:
        """[t0, t1) x time_base seconds of the audio."""
        if os.getpid() != self._pid:
            self.__init__(*self._args)  # type: ignore[misc]
        data, first, lo, hi, missing, m0, m1, bad = _reel.audio_samples(self.handle, int(t0), int(t1),
                                                                        time_base.numerator, time_base.denominator)
        r = int(self.info["sample_rate"])
        return AudioSamples(data, r, int(first), float(self.info["start_seconds"]) + first / r, (int(lo), int(hi)),
                            (float(t0 * time_base), float(t1 * time_base)), int(missing), (int(m0), int(m1)),
                            int(bad))


def frames_window(pts: Sequence[int], dur: Sequence[int], indices: Sequence[int]) -> Tuple[int, int]:
    """[min p_i, max(p_i + d_i)) of the frames, in the video's time base."""
    if not indices:
        raise ValueError("get_audio_for_frames: no frame indices")
    n = len(pts)
    ks = []
    for i in indices:
        k = int(i) + n if int(i) < 0 else int(i)
        if not 0 <= k < n:
            raise IndexError(f"frame index {i} out of range (video has {n} frames)")
        ks.append(k)
    return min(pts[k] for k in ks), max(pts[k] + dur[k] for k in ks)


def seconds_window(t0: float, t1: float) -> Tuple[int, int, Fraction]:
    """[t0, t1) seconds as integers over a microsecond time base (exact for
    the times a user types; frame times come through frames_window)."""
    if t1 < t0:
        raise ValueError(f"get_audio_played_in_range: stop {t1} is before start {t0}")
    q0, q1 = Fraction(t0).limit_denominator(1_000_000), Fraction(t1).limit_denominator(1_000_000)
    den = 1_000_000
    return int(q0 * den), int(q1 * den), Fraction(1, den)
