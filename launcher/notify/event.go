package notify

import (
	"strconv"
	"strings"
	"time"
)

// Event is one notification, as sent: a webhook's JSON body, a command's
// stdin, and (as TFHIVE_*) its environment.
type Event struct {
	// Text is the event in a line, for people (Slack's and Mattermost's
	// `text`).
	Text string `json:"text"`
	// Kind is what happened: a run's end (succeeded, failed, cancelled,
	// preempted, idle-stopped, or another result word) or a timeline
	// row's kind (idle-warning, hang, requeued, …).
	Kind string `json:"event"`
	Run  string `json:"run"`
	// End: Kind is the run's end; Result its result word (the summary's)
	// and ExitCode tfhive's exit code for it.
	End      bool   `json:"end"`
	Result   string `json:"result,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	// Task and Host are the row's, when it is a task's.
	Task   string `json:"task,omitempty"`
	Host   string `json:"host,omitempty"`
	Detail string `json:"detail,omitempty"`
	// User, Machine and LogDir say whose run, and where its record is.
	User    string    `json:"user,omitempty"`
	Machine string    `json:"machine,omitempty"`
	LogDir  string    `json:"log_dir,omitempty"`
	Time    time.Time `json:"time"`
}

// EndKind is the kind of a run's end whose summary says result: the
// result word itself, but for those that say the run was stopped on
// purpose (cancelled) or failed by its limit (failed); "" for a keeper
// that stepped down, another keeper now having the run and its end.
func EndKind(result string) string {
	switch result {
	case "interrupted", "stdout-closed", "cancelled":
		return "cancelled"
	case "timeout":
		return "failed"
	case "stepped-down":
		return ""
	}
	return result
}

// text is e's line: "tfhive: run R failed, exit 9: worker:1 on h1 exited 9"
// (a task's own 7, tfhive's hung, would read "exit 1").
func (e Event) text() string {
	var b strings.Builder
	b.WriteString("tfhive: run " + e.Run + " ")
	switch {
	case e.End:
		b.WriteString(e.Kind)
		if e.Result != "" && e.Result != e.Kind {
			b.WriteString(" (" + e.Result + ")")
		}
		if e.ExitCode != nil && *e.ExitCode != 0 {
			b.WriteString(", exit " + strconv.Itoa(*e.ExitCode))
		}
	default:
		b.WriteString(strings.ReplaceAll(e.Kind, "-", " "))
	}
	where := e.Task
	if e.Host != "" {
		where = strings.TrimSpace(where + " on " + e.Host)
	}
	if where != "" {
		b.WriteString(": " + where)
	}
	if e.Detail != "" {
		if where != "" {
			b.WriteString(", ")
		} else {
			b.WriteString(": ")
		}
		b.WriteString(e.Detail)
	}
	if e.Machine != "" {
		b.WriteString(" [" + e.Machine + "]")
	}
	return b.String()
}

// env is e as a command's environment.
func (e Event) env() []string {
	code := ""
	if e.ExitCode != nil {
		code = strconv.Itoa(*e.ExitCode)
	}
	end := "0"
	if e.End {
		end = "1"
	}
	return []string{
		"TFHIVE_EVENT=" + e.Kind, "TFHIVE_RUN=" + e.Run, "TFHIVE_END=" + end,
		"TFHIVE_RESULT=" + e.Result, "TFHIVE_EXIT_CODE=" + code,
		"TFHIVE_TASK=" + e.Task, "TFHIVE_HOST=" + e.Host, "TFHIVE_DETAIL=" + e.Detail,
		"TFHIVE_TEXT=" + e.Text, "TFHIVE_LOG_DIR=" + e.LogDir,
	}
}
