package hosts

import "fmt"

// ConfigError is bad input found before any host is touched: a hosts file,
// a -H value or an ssh_config that cannot be used. main maps it to exit 2.
type ConfigError struct {
	Msg  string
	hint string
}

func (e *ConfigError) Error() string { return e.Msg }
func (e *ConfigError) Hint() string  { return e.hint }

func configErrorf(format string, a ...any) *ConfigError {
	return &ConfigError{Msg: fmt.Sprintf(format, a...)}
}

func (e *ConfigError) withHint(format string, a ...any) *ConfigError {
	e.hint = fmt.Sprintf(format, a...)
	return e
}
