package maintenanceschedule

import (
	"math/bits"
	"sort"
	"time"
)

// Back-to-back openings. A schedule's activations on a matching day are
// its hours × minutes; consecutive ones whose gap the duration covers make
// one interval (a per-minute schedule lasting a minute over 23 hours is
// one interval of 23 hours). runs holds, for the k-th activation of a
// day, the index of the last activation of the day its run reaches, so a
// run is crossed in one step rather than opening by opening. When a run
// reaches the end of its day and the duration covers the gap to a later
// matching day, the openings go on into that day: such chains of days
// are crossed a month at a time on the bits of the month's matching days
// (a window as long as its period, "0 22 * * 6" for 168h, is one
// interval for years), or at once when the schedule matches every day.

// runEnds computes the runs of a schedule's day for openings lasting d.
func runEnds(s Schedule, d time.Duration) []int16 {
	n := len(s.hours) * len(s.minutes)
	out := make([]int16, n)
	out[n-1] = int16(n - 1)
	for k := n - 2; k >= 0; k-- {
		if time.Duration(s.dayMinute(k+1)-s.dayMinute(k))*time.Minute <= d {
			out[k] = out[k+1]
		} else {
			out[k] = int16(k)
		}
	}
	return out
}

// dayMinute is the minute of the day of a matching day's k-th activation.
func (s Schedule) dayMinute(k int) int {
	return s.hours[k/len(s.minutes)]*60 + s.minutes[k%len(s.minutes)]
}

// everyDay is true when the schedule matches every day of every month.
func (s Schedule) everyDay() bool {
	const months, doms, dows = 0x1FFE, 0xFFFFFFFE, 0x7F
	domAll := s.spec.Dom&doms == doms
	dowAll := s.spec.Dow&dows == dows
	if s.spec.Month&months != months {
		return false
	}
	if s.spec.Dom&starBit != 0 || s.spec.Dow&starBit != 0 {
		return domAll && dowAll
	}
	return domAll || dowAll
}

// runLast returns the last opening of the run of back-to-back openings
// that starts with the opening at a, within a's zone period (where wall
// clock and elapsed time differ by one offset) and not after horizon; a
// itself when a is no activation on the wall clock (an opening the clocks
// skipped, which happens at the jump) or starts no run.
func (w *Window) runLast(b *budget, a, horizon time.Time) time.Time {
	b.spend(1)
	if w.Location != time.UTC {
		b.spend(zoneSteps)
	}
	local := a.In(w.Location)
	_, periodEnd := local.ZoneBounds()
	_, offset := local.Zone()
	limit := onWallClock(horizon, offset)
	if !periodEnd.IsZero() {
		if pe := onWallClock(periodEnd, offset); pe.Before(limit) {
			limit = pe
		}
	}
	last := w.wallRunLast(b, onWallClock(a, offset), limit)
	return last.Add(-time.Duration(offset) * time.Second)
}

// wallRunLast is runLast on the wall-clock timeline: the last activation
// before limit of the run that starts at the activation wall.
func (w *Window) wallRunLast(b *budget, wall, limit time.Time) time.Time {
	s := w.Schedule
	if wall.Nanosecond() != 0 || wall.Unix()%60 != 0 || !wall.Before(limit) {
		return wall
	}
	minute := floorDiv(wall.Unix(), 60)
	day := floorDiv(minute, minutesPerDay)
	mod := int(minute - day*minutesPerDay)
	h, m := mod/60, mod%60
	_, month, dom := civil(day)
	if s.spec.Month&(1<<uint(month)) == 0 || !s.dayMatches(day, dom) || s.spec.Hour&(1<<uint(h)) == 0 || s.spec.Minute&(1<<uint(m)) == 0 {
		return wall
	}
	// Activations are valid before limitMin (a whole minute count).
	limitMin := floorDiv(limit.Unix()+59, 60)
	first := bits.OnesCount64(s.spec.Hour&(1<<uint(h)-1))*len(s.minutes) + bits.OnesCount64(s.spec.Minute&(1<<uint(m)-1))
	last := int(w.runs[first])
	if last == len(w.runs)-1 {
		// The run reaches the end of the day: it goes on into the days
		// chained to this one.
		if d := w.lastChainedDay(b, day, limitMin); d != day {
			day, first, last = d, 0, int(w.runs[0])
		}
	}
	// The last of the run's activations first..last of day before limitMin
	// (the first is: lastChainedDay counts only such days).
	k := sort.Search(last-first+1, func(x int) bool { return day*minutesPerDay+int64(s.dayMinute(first+x)) >= limitMin })
	if k == 0 {
		return wall
	}
	return time.Unix((day*minutesPerDay+int64(s.dayMinute(first+k-1)))*60, 0).UTC()
}

// lastChainedDay returns the last of the matching days, from day (whose
// run reaches its end) on, that the openings run through without a gap:
// a matching day follows the one before when the duration covers the gap
// from the last activation of that one to its own first, and goes on to
// the next when its first run reaches its end. Only days with an
// activation before limitMin count. The days are crossed month by month
// (monthDays), or at once when every day matches.
func (w *Window) lastChainedDay(b *budget, day, limitMin int64) int64 {
	s := w.Schedule
	gap := w.chainGap()
	limitDay := floorDiv(limitMin-1, minutesPerDay)
	through := limitDay
	if limitDay*minutesPerDay+int64(s.dayMinute(0)) >= limitMin {
		through-- // the limit comes before that day's first activation
	}
	switch {
	case gap == 0 || through <= day:
		return day
	case w.runs[0] != int16(len(w.runs)-1):
		// The next day's first run ends within that day.
		return s.chainedDays(b, day, through, gap, true)
	case s.everyDay():
		return through
	}
	return s.chainedDays(b, day, through, gap, false)
}

// chainGap is the most days between two matching days that the openings
// bridge: the duration covers the gap from a day's last activation to the
// first of the matching day that many days later.
func (w *Window) chainGap() int64 {
	s := w.Schedule
	covered := int64(w.Duration/time.Minute) + int64(s.dayMinute(len(w.runs)-1)-s.dayMinute(0))
	return covered / minutesPerDay
}

// chainedDays returns the last matching day, up to through, of the chain
// that starts with day: each matching day at most gap days after the one
// before; only the first after day when one is set. A month looked at
// costs a step of b: the bits of its matching days say where the chain
// breaks.
func (s Schedule) chainedDays(b *budget, day, through, gap int64, one bool) int64 {
	last := day
	y, m, _ := civil(day)
	for {
		b.spend(1)
		mask, first, length := s.monthDays(y, m)
		if first > through || first-last > gap {
			return last
		}
		// Only the days after last and up to through.
		if lo := last - first + 1; lo > 0 {
			mask &^= 1<<uint(lo) - 1
		}
		if hi := through - first; hi < int64(length)-1 {
			mask &= 1<<uint(hi+1) - 1
		}
		if mask != 0 {
			lowest := int64(bits.TrailingZeros64(mask))
			if first+lowest-last > gap {
				return last
			}
			if one {
				return first + lowest
			}
			highest := int64(63 - bits.LeadingZeros64(mask))
			if hole := firstHole(mask, lowest, highest, gap); hole >= 0 {
				return first + hole - 1
			}
			last = first + highest
		}
		if m++; m > 12 {
			y, m = y+1, 1
		}
	}
}

// firstHole returns the first bit between lowest and highest (both set in
// mask) that begins gap or more unset bits; -1 when there is none.
func firstHole(mask uint64, lowest, highest, gap int64) int64 {
	if highest-lowest-1 < gap {
		return -1 // not that many bits in between
	}
	between := (uint64(1)<<uint(highest) - 1) &^ (uint64(1)<<uint(lowest+1) - 1)
	// holes: the bits that begin at least have unset bits, have doubling.
	holes := ^mask & between
	for have := int64(1); have < gap && holes != 0; {
		shift := min(have, gap-have)
		holes &= holes >> uint(shift)
		have += shift
	}
	if holes == 0 {
		return -1
	}
	return int64(bits.TrailingZeros64(holes))
}

// monthDays returns the days of month m of year y that the schedule
// matches, bit d-1 for the d-th, the month's first day (counted from
// 1 January 1970) and its length.
func (s Schedule) monthDays(y, m int) (mask uint64, first int64, length int) {
	first = daysFromCivil(y, m, 1)
	length = int(daysFromCivil(y, m+1, 1) - first)
	if s.spec.Month&(1<<uint(m)) == 0 {
		return 0, first, length
	}
	all := uint64(1)<<uint(length) - 1
	dom := s.spec.Dom >> 1 & all
	var week uint64 // the first seven days
	for i, wd := 0, weekday(first); i < 7; i, wd = i+1, (wd+1)%7 {
		if s.spec.Dow&(1<<uint(wd)) != 0 {
			week |= 1 << uint(i)
		}
	}
	dow := (week | week<<7 | week<<14 | week<<21 | week<<28) & all
	if s.spec.Dom&starBit != 0 || s.spec.Dow&starBit != 0 {
		return dom & dow, first, length
	}
	return dom | dow, first, length
}
