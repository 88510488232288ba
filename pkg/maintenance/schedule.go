package maintenance

import (
	"errors"
	"fmt"
	"math/bits"
	"sort"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// parser reads standard 5-field cron expressions (minute, hour, day of
// month, month, day of week), the library Argo CD reads sync windows
// with. No seconds field and no descriptors (@daily): one way to say a time.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// maxShift bounds how far one clock change moves the wall clock: two hours
// in today's tz database (Antarctica/Troll). Searches near a change look
// this far around it.
const maxShift = 3 * time.Hour

// maxScan bounds the cron activations one search inspects near a clock
// change (an every-minute schedule needs about 12 h of them).
const maxScan = 4096

// Schedule is a parsed cron expression. Its fields are matched against the
// wall clock of a time zone, as crontab does, not against UTC:
//
//   - when the clocks go forward over an activation (02:30 on the night
//     Europe/Berlin skips from 02:00 to 03:00), it happens at the jump
//     (03:00 CEST), so a window is never lost to a change of time;
//   - when the clocks go back over an activation (02:30 happens twice),
//     it happens once, at its first occurrence, unless the schedule runs
//     every hour: then it keeps its pace in elapsed time and also happens
//     in the repeated hour.
type Schedule struct {
	expr string
	// spec runs on the wall-clock timeline: wall-clock readings coded as
	// UTC times, where no clock ever jumps.
	spec *cron.SpecSchedule
}

// ParseSchedule parses a standard 5-field cron expression, e.g. "0 22 * * 6"
// for Saturdays at 22:00. Time zone prefixes (CRON_TZ=) are refused: the
// time zone is the window's.
func ParseSchedule(expr string) (Schedule, error) {
	trimmed := strings.TrimSpace(expr)
	if strings.HasPrefix(trimmed, "TZ=") || strings.HasPrefix(trimmed, "CRON_TZ=") {
		return Schedule{}, errors.New("a time zone prefix is not part of the schedule: set the window's time zone instead")
	}
	s, err := parser.Parse(trimmed)
	if err != nil {
		return Schedule{}, err
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return Schedule{}, fmt.Errorf("unexpected schedule type %T", s)
	}
	spec.Location = time.UTC
	if spec.Next(cycleStart.Add(-time.Second)).IsZero() {
		return Schedule{}, errors.New("matches no date (a day that does not exist in the months given, such as 30 February)")
	}
	return Schedule{expr: expr, spec: spec}, nil
}

// String returns the expression as written.
func (s Schedule) String() string { return s.expr }

// everyHour is true for schedules that match every hour of the day: in a
// repeated hour they keep their pace in elapsed time.
func (s Schedule) everyHour() bool {
	const allHours = 1<<24 - 1
	return s.spec.Hour&allHours == allHours
}

// Next returns the first activation strictly after t, in loc's wall clock;
// the zero time when there is none within five years.
func (s Schedule) Next(t time.Time, loc *time.Location) time.Time {
	// Within one zone period, wall clock and elapsed time differ by a
	// fixed offset: step on the wall clock and convert back. Only near a
	// clock change must activations be resolved one by one.
	local := t.In(loc)
	start, end := local.ZoneBounds()
	if start.IsZero() || !start.After(t.Add(-maxShift)) {
		w := s.spec.Next(wallClock(t, loc))
		if w.IsZero() {
			return w
		}
		_, offset := local.Zone()
		a := w.Add(-time.Duration(offset) * time.Second)
		if end.IsZero() || a.Before(end) {
			return a
		}
	}
	return s.nextAcrossChange(t, loc)
}

// nextAcrossChange is Next near a clock change. An activation after t
// comes from a wall-clock time at most 2×maxShift before t's (a gap moves
// it later, a repeated hour comes back to it), and once a candidate is
// found, a wall-clock time more than maxShift after it cannot happen sooner.
func (s Schedule) nextAcrossChange(t time.Time, loc *time.Location) time.Time {
	var best time.Time
	w := wallClock(t, loc).Add(-2 * maxShift)
	for i := 0; i < maxScan; i++ {
		w = s.spec.Next(w)
		if w.IsZero() || (!best.IsZero() && w.After(wallClock(best, loc).Add(maxShift))) {
			break
		}
		for _, a := range s.instants(w, loc) {
			if a.After(t) && (best.IsZero() || a.Before(best)) {
				best = a
			}
		}
	}
	return best
}

// instants returns when the wall-clock time w happens in loc under the
// rules of Schedule: once; at the jump when the clocks skip it; at its
// first occurrence (or both, for every-hour schedules) when they repeat it.
func (s Schedule) instants(w time.Time, loc *time.Location) []time.Time {
	offsets, changes := zoneChanges(loc, w.Add(-15*time.Hour), w.Add(15*time.Hour))
	var out []time.Time
	for _, off := range offsets {
		t := w.Add(-time.Duration(off) * time.Second)
		if wallClock(t, loc).Equal(w) && !containsTime(out, t) {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	switch {
	case len(out) == 0:
		for _, c := range changes {
			if wallClock(c.Add(-time.Nanosecond), loc).Before(w) && wallClock(c, loc).After(w) {
				return []time.Time{c}
			}
		}
		return nil
	case len(out) > 1 && !s.everyHour():
		return out[:1]
	}
	return out
}

// zoneChanges returns the UTC offsets (seconds) in effect in loc between
// from and to, and the instants the clocks changed in between.
func zoneChanges(loc *time.Location, from, to time.Time) (offsets []int, changes []time.Time) {
	t := from
	for i := 0; i < 16; i++ {
		local := t.In(loc)
		_, off := local.Zone()
		if !containsInt(offsets, off) {
			offsets = append(offsets, off)
		}
		_, end := local.ZoneBounds()
		if end.IsZero() || !end.Before(to) {
			break
		}
		changes = append(changes, end)
		t = end
	}
	return offsets, changes
}

// wallClock is t's wall-clock reading in loc coded as a UTC time.
func wallClock(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
}

func containsTime(ts []time.Time, t time.Time) bool {
	for _, x := range ts {
		if x.Equal(t) {
			return true
		}
	}
	return false
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// cycleStart and cycleEnd span 28 years: from 1901 to 2099 the calendar
// (dates, weekdays, leap days) repeats every 28 years, so the days a
// schedule matches in this span are the pattern of every year until 2100.
var (
	cycleStart = time.Date(2001, time.January, 1, 0, 0, 0, 0, time.UTC)
	cycleEnd   = cycleStart.AddDate(28, 0, 0)
)

// Period returns the shortest interval between two consecutive
// activations on the wall clock: a window may not last longer, or its
// openings would overlap. (On the nights the clocks change, a day is an
// hour shorter or longer; consecutive openings may then touch or overlap
// by that hour and count as one.)
//
// Activations of a matching day are all its hours × minutes, so the
// shortest interval is between two minutes of an hour, the last minute of
// an hour and the first of the next matching hour, or the last activation
// of a day and the first of the next matching day; only the days need a
// search, over one 28-year calendar cycle.
func (s Schedule) Period() time.Duration {
	minutes := setBits(s.spec.Minute, 59)
	hours := setBits(s.spec.Hour, 23)
	period := time.Duration(1<<63 - 1)
	shorter := func(minutes int) {
		if d := time.Duration(minutes) * time.Minute; d < period {
			period = d
		}
	}
	for i := 1; i < len(minutes); i++ {
		shorter(minutes[i] - minutes[i-1])
	}
	firstMinute, lastMinute := minutes[0], minutes[len(minutes)-1]
	for i := 1; i < len(hours); i++ {
		shorter((hours[i]-hours[i-1])*60 - lastMinute + firstMinute)
	}
	if days := s.shortestDayGap(); days > 0 {
		first := hours[0]*60 + firstMinute
		last := hours[len(hours)-1]*60 + lastMinute
		shorter(days*24*60 - last + first)
	}
	return period
}

// shortestDayGap returns the fewest days between two consecutive days the
// schedule matches.
func (s Schedule) shortestDayGap() int {
	days := &cron.SpecSchedule{Second: 1, Minute: 1, Hour: 1, Dom: s.spec.Dom, Month: s.spec.Month, Dow: s.spec.Dow, Location: time.UTC}
	prev := days.Next(cycleStart.Add(-time.Second))
	best := 0
	for !prev.IsZero() && !prev.After(cycleEnd) {
		next := days.Next(prev)
		if next.IsZero() {
			break
		}
		if gap := int(next.Sub(prev) / (24 * time.Hour)); best == 0 || gap < best {
			best = gap
			if best == 1 {
				break
			}
		}
		prev = next
	}
	return best
}

// setBits returns the numbers 0..max whose bit is set, in order.
func setBits(field uint64, max int) []int {
	var out []int
	for f := field & (1<<uint(max+1) - 1); f != 0; f &= f - 1 {
		out = append(out, bits.TrailingZeros64(f))
	}
	return out
}
