package report

import "time"

// maxPoints is the most points a series keeps: a chart is a few hundred
// pixels wide.
const maxPoints = 1000

// point is one value at a time.
type point struct {
	t time.Time
	v float64
}

// series is a line of a chart, thinned as it is read: once it holds
// maxPoints points every other one is dropped and it keeps every 2nd
// point from then on, then every 4th…; its last point is always kept.
type series struct {
	pts    []point
	stride int
	skip   int
	last   point
	held   bool // last was passed over
}

func (s *series) add(p point) {
	if s.stride == 0 {
		s.stride = 1
	}
	if s.skip > 0 {
		s.skip--
		s.last, s.held = p, true
		return
	}
	s.held = false
	s.pts = append(s.pts, p)
	s.skip = s.stride - 1
	if len(s.pts) >= maxPoints {
		k := 0
		for i := 0; i < len(s.pts); i += 2 {
			s.pts[k] = s.pts[i]
			k++
		}
		s.pts = s.pts[:k]
		s.stride *= 2
		s.skip = s.stride - 1
	}
}

// points are the series' points, its last included.
func (s *series) points() []point {
	if s.held {
		return append(s.pts, s.last)
	}
	return s.pts
}
