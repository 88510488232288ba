package advisor

// painter wraps text in ANSI colours when enabled.
type painter bool

func (p painter) paint(code, s string) string {
	if !p || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (p painter) bold(s string) string  { return p.paint("1", s) }
func (p painter) red(s string) string   { return p.paint("31", s) }
func (p painter) green(s string) string { return p.paint("32", s) }
func (p painter) cyan(s string) string  { return p.paint("36", s) }
