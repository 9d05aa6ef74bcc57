package report

import (
	"math"
	"strconv"
	"strings"
)

// Numbers as people write them (units_test.go's golden file has them):
// four significant digits, thousands grouped (48,200, never 4.82e+04),
// an exponent only past a million or below a ten-thousandth, as 1.5e-5
// (never e-05); memory in MiB as nvidia-smi and the console say it, and
// in GiB beside it once it is a GiB or more.

// numLabel writes a tick's or a point's value, short.
func numLabel(v float64) string {
	switch a := math.Abs(v); {
	case v == 0:
		return "0"
	case !finite(v):
		return strconv.FormatFloat(v, 'g', -1, 64)
	case a >= 1e7 || a < 1e-4:
		m, e, _ := strings.Cut(strconv.FormatFloat(v, 'e', 3, 64), "e")
		if strings.Contains(m, ".") {
			m = strings.TrimRight(strings.TrimRight(m, "0"), ".")
		}
		sign := e[:1]
		e = strings.TrimLeft(e[1:], "0")
		if sign == "+" {
			sign = ""
		}
		return m + "e" + sign + e
	case a >= 1000:
		// Four significant digits, whole: 48213 → 48,210.
		p := math.Pow(10, math.Floor(math.Log10(a))-3)
		return group(strconv.FormatFloat(math.Round(v/p)*p, 'f', 0, 64))
	}
	// 999.96 rounds to 1000: grouped as the others.
	if s := strconv.FormatFloat(v, 'g', 4, 64); !strings.ContainsAny(s, ".e") && len(strings.TrimPrefix(s, "-")) > 3 {
		return group(s)
	} else {
		return s
	}
}

// group puts a comma between each three digits of a whole number.
func group(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return sign + b.String()
}

// mibLabel is an amount of memory in MiB: 812 MiB, 48,200 MiB (47.1 GiB).
func mibLabel(mib float64) string {
	s := group(strconv.FormatFloat(math.Round(mib), 'f', 0, 64)) + " MiB"
	if mib >= 1024 {
		s += " (" + gibLabel(mib) + ")"
	}
	return s
}

// gibLabel is MiB in GiB: 47.1 GiB, 141 GiB.
func gibLabel(mib float64) string {
	g := mib / 1024
	if g >= 100 {
		return group(strconv.FormatFloat(math.Round(g), 'f', 0, 64)) + " GiB"
	}
	return strconv.FormatFloat(g, 'f', 1, 64) + " GiB"
}
