package maintenanceschedule

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// parser reads standard 5-field cron expressions (minute, hour, day of
// month, month, day of week), the library Argo CD reads sync windows
// with. No seconds field and no descriptors (@daily): one way to say a time.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

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
	// hours and minutes are the hours and minutes the schedule matches, in
	// order: a matching day's activations are hours × minutes, hour major.
	hours, minutes []int
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
	return Schedule{expr: expr, spec: spec, hours: setBits(spec.Hour, 23), minutes: setBits(spec.Minute, 59)}, nil
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
//
// Within one zone period (an interval with one UTC offset) wall clock and
// elapsed time differ by that offset, so each period is searched on the
// wall clock and converted back; a period that begins with the clocks
// going forward first checks the skipped wall-clock times (an activation
// there happens at the jump), one that begins with the clocks going back
// skips the repeated ones (they happened in the period before) unless the
// schedule runs every hour.
func (s Schedule) Next(t time.Time, loc *time.Location) time.Time {
	return s.nextIn(nil, t, loc)
}

// zoneSteps is what a zone period searched costs Next: looking up the
// period, its offset and the offset before it.
const zoneSteps = 4

// nextIn is Next, paid for with b.
func (s Schedule) nextIn(b *budget, t time.Time, loc *time.Location) time.Time {
	if loc == time.UTC {
		return s.nextWall(b, t.UTC()) // one zone period, no offset
	}
	at := t // an instant of the period searched
	for i := 0; i < maxPeriods; i++ {
		b.spend(zoneSteps)
		local := at.In(loc)
		start, end := local.ZoneBounds()
		_, offset := local.Zone()
		from, inclusive := wallClock(t, loc), false
		if start.After(t) {
			from, inclusive = onWallClock(start, offset), true
		}
		if !start.IsZero() {
			_, before := start.Add(-time.Nanosecond).In(loc).Zone()
			switch {
			case before < offset && start.After(t):
				if w := s.next(b, onWallClock(start, before), true); !w.IsZero() && w.Before(onWallClock(start, offset)) {
					return start
				}
			case before > offset && !s.everyHour():
				if repeatedUntil := onWallClock(start, before); from.Before(repeatedUntil) {
					from, inclusive = repeatedUntil, true
				}
			}
		}
		w := s.next(b, from, inclusive)
		if w.IsZero() {
			return w
		}
		if end.IsZero() || w.Before(onWallClock(end, offset)) {
			return w.Add(-time.Duration(offset) * time.Second)
		}
		at = end
	}
	return time.Time{}
}

// maxPeriods bounds the zone periods one search crosses: two changes of
// time a year for the five years the cron library looks ahead.
const maxPeriods = 16

// next returns the first wall-clock activation after w (or at w, when
// inclusive; w is then a whole second, as every change of time is).
func (s Schedule) next(b *budget, w time.Time, inclusive bool) time.Time {
	if inclusive {
		w = w.Add(-time.Second)
	}
	return s.nextWall(b, w)
}

// nextWall is the cron library's Next on the wall-clock timeline (the
// first whole minute strictly after w that matches; zero past the fifth
// year after w's), computed on bit sets instead of stepping a time.Time
// field by field: the evaluation of windows calls it thousands of times.
// Every day (or month) it looks at past the first costs a step of b.
func (s Schedule) nextWall(b *budget, w time.Time) time.Time {
	sec := w.Unix() + 1            // strictly after: from the next whole second
	minute := floorDiv(sec+59, 60) // the first whole minute at or after it
	day := floorDiv(minute, minutesPerDay)
	mod := int(minute - day*minutesPerDay)
	yearLimit := time.Unix(sec, 0).UTC().Year() + 5
	for {
		y, m, d := civil(day)
		if y > yearLimit {
			return time.Time{}
		}
		if s.spec.Month&(1<<uint(m)) == 0 {
			// The first of the next month named, this year or the next.
			if nm := nextBit(s.spec.Month, m+1, 12); nm > 0 {
				day = daysFromCivil(y, nm, 1)
			} else {
				day = daysFromCivil(y+1, nextBit(s.spec.Month, 1, 12), 1)
			}
			mod = 0
			b.spend(1)
			continue
		}
		if s.dayMatches(day, d) {
			if h, mi, ok := s.atOrAfter(mod); ok {
				return time.Unix((day*minutesPerDay+int64(h*60+mi))*60, 0).UTC()
			}
		}
		day, mod = s.nextDayAfter(day, y, m, d), 0
		b.spend(1)
	}
}

// nextDayAfter returns the next day that may match after day (y-m-d):
// the next day, or, when only the day of the month restricts the days,
// the next day of the month it names (the first of the next month when
// this month has none left).
func (s Schedule) nextDayAfter(day int64, y, m, d int) int64 {
	if s.spec.Dow&starBit == 0 || s.spec.Dom&starBit != 0 {
		return day + 1
	}
	first, next := daysFromCivil(y, m, 1), daysFromCivil(y, m+1, 1)
	if nd := nextBit(s.spec.Dom, d+1, 31); nd > 0 && first+int64(nd-1) < next {
		return first + int64(nd-1)
	}
	return next
}

// atOrAfter returns the first hour and minute of a matching day at or
// after minute mod of the day.
func (s Schedule) atOrAfter(mod int) (hour, minute int, ok bool) {
	h, m := mod/60, mod%60
	if s.spec.Hour&(1<<uint(h)) != 0 {
		if next := nextBit(s.spec.Minute, m, 59); next >= 0 {
			return h, next, true
		}
	}
	if next := nextBit(s.spec.Hour, h+1, 23); next >= 0 {
		return next, s.minutes[0], true
	}
	return 0, 0, false
}

// dayMatches is the cron library's rule for a day (dom: its day of the
// month): when either day field is unrestricted (*), both must match,
// otherwise either.
func (s Schedule) dayMatches(day int64, dom int) bool {
	domMatch := s.spec.Dom&(1<<uint(dom)) != 0
	dowMatch := s.spec.Dow&(1<<uint(weekday(day))) != 0
	if s.spec.Dom&starBit != 0 || s.spec.Dow&starBit != 0 {
		return domMatch && dowMatch
	}
	return domMatch || dowMatch
}

// starBit marks a field written as * (the cron library's convention).
const starBit = 1 << 63

const minutesPerDay = 24 * 60

// nextBit returns the first bit set in field at or after from, up to max;
// -1 when none.
func nextBit(field uint64, from, max int) int {
	if from > max {
		return -1
	}
	f := field & (1<<uint(max+1) - 1) >> uint(from) << uint(from)
	if f == 0 {
		return -1
	}
	return bits.TrailingZeros64(f)
}

// floorDiv is a/b rounded toward minus infinity (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// weekday of a day counted from 1 January 1970 (a Thursday); Sunday is 0.
func weekday(day int64) int {
	return int((day%7 + 7 + 4) % 7)
}

// civil returns the date of a day counted from 1 January 1970 (proleptic
// Gregorian calendar; H. Hinnant's days_from_civil, inverted).
func civil(day int64) (year int, month int, dom int) {
	z := day + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	return int(y), int(m), int(d)
}

// daysFromCivil counts the days from 1 January 1970 to a date; a month
// of 13 is January of the next year.
func daysFromCivil(year, month, dom int) int64 {
	if month > 12 {
		year, month = year+1, month-12
	}
	y := int64(year)
	if month <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	mp := int64((month + 9) % 12)
	doy := (153*mp+2)/5 + int64(dom) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// onWallClock is the wall-clock reading of instant t under a UTC offset
// (seconds), coded as a UTC time.
func onWallClock(t time.Time, offset int) time.Time {
	return t.UTC().Add(time.Duration(offset) * time.Second)
}

// wallClock is t's wall-clock reading in loc coded as a UTC time.
func wallClock(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
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
