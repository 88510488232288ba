package maintenance

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
// run is crossed in one step rather than opening by opening; days are
// crossed one by one, or at once when the schedule matches every day and
// its runs span whole days.

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
	limitDay := floorDiv(limitMin-1, minutesPerDay)
	n := len(w.runs)
	i := bits.OnesCount64(s.spec.Hour&(1<<uint(h)-1))*len(s.minutes) + bits.OnesCount64(s.spec.Minute&(1<<uint(m)-1))
	toTime := func(x int64) time.Time { return time.Unix(x*60, 0).UTC() }
	last := minute
	wholeDays := w.runs[0] == int16(n-1) && w.dayGap(1)
	for walked := 0; ; walked++ {
		if walked%4 == 3 {
			b.spend(1)
		}
		j := int(w.runs[i])
		if day*minutesPerDay+int64(s.dayMinute(j)) >= limitMin {
			k := sort.Search(j-i+1, func(x int) bool { return day*minutesPerDay+int64(s.dayMinute(i+x)) >= limitMin })
			if k > 0 {
				last = day*minutesPerDay + int64(s.dayMinute(i+k-1))
			}
			return toTime(last)
		}
		last = day*minutesPerDay + int64(s.dayMinute(j))
		if j < n-1 {
			return toTime(last)
		}
		if wholeDays && s.everyDay() {
			// Every day is one run that reaches the next: the last
			// activation before limit ends it.
			lastMod := int(limitMin - 1 - limitDay*minutesPerDay)
			k := sort.Search(n, func(x int) bool { return s.dayMinute(x) > lastMod })
			if k > 0 {
				return toTime(limitDay*minutesPerDay + int64(s.dayMinute(k-1)))
			}
			return toTime((limitDay-1)*minutesPerDay + int64(s.dayMinute(n-1)))
		}
		next := day + 1
		for ; next <= limitDay; next++ {
			if _, mo, d := civil(next); s.spec.Month&(1<<uint(mo)) != 0 && s.dayMatches(next, d) {
				break
			}
			if walked++; walked%4 == 3 {
				b.spend(1)
			}
		}
		if next > limitDay || !w.dayGap(int(next-day)) {
			return toTime(last)
		}
		day, i = next, 0
	}
}

// dayGap reports whether the openings run from a matching day's last
// activation into the first of a matching day days later.
func (w *Window) dayGap(days int) bool {
	s := w.Schedule
	gap := days*minutesPerDay - s.dayMinute(len(w.runs)-1) + s.dayMinute(0)
	return time.Duration(gap)*time.Minute <= w.Duration
}
