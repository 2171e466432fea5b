package rollout

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/kplan-dev/kplan"
)

// messages holds the sentence of each reason a Wait carries.
var messages = map[kplan.Reason]string{
	ReasonBudget:          "maxUnavailable budget exhausted",
	ReasonWindow:          "group window: waiting for the slowest column",
	ReasonNotAvailable:    "not available yet",
	ReasonRecovering:      "being replaced by recovery",
	ReasonScaleDown:       "surplus, kept until others are available",
	ReasonLockstep:        "old, kept while the other roles drain theirs",
	ReasonFailed:          "failed",
	ReasonLost:            "lost",
	ReasonStartTimeout:    "not ready for longer than StartTimeout",
	ReasonGangMember:      "gang member missing or not ready for longer than GangMemberTimeout",
	ReasonQuota:           "recover quota exhausted",
	ReasonNoRecover:       "recover strategy is NoRecover",
	ReasonReplacementWait: "replacement not ready yet",
	ReasonReleaseDelay:    "swapped out, waiting for ReleaseDelay",
}

// wait is the Wait of replica for reason, with its sentence.
func wait(replica string, reason kplan.Reason) Wait {
	return Wait{Replica: replica, Reason: reason, Message: messages[reason]}
}

// waitOrder is the order a step's waits are summarized in: what holds the
// rollout back first.
var waitOrder = [...]kplan.Reason{ReasonBudget, ReasonWindow, ReasonScaleDown, ReasonLockstep, ReasonRecovering, ReasonNotAvailable}

// namesShown is how many replica names a step's message lists per kind.
const namesShown = 5

// maxMessage is the longest message a metav1.Condition accepts.
const maxMessage = 32 * 1024

// clip shortens msg to maxMessage bytes, ending it with "..." when it cut,
// without splitting a UTF-8 sequence.
func clip(msg string) string {
	if len(msg) <= maxMessage {
		return msg
	}
	cut := maxMessage - len("...")
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "..."
}

// summarize sets s.Reason and s.Message from the rest of the step.
func summarize(s *Step) {
	if s.Complete {
		s.Reason, s.Message = ReasonComplete, ""
		return
	}
	var parts []string
	if n := len(s.Update); n > 0 {
		parts = append(parts, "update "+listNames(n, func(i int) string { return s.Update[i].Replica }))
	}
	if len(s.Create) > 0 {
		parts = append(parts, fmt.Sprintf("create %d", len(s.Create)))
	}
	if n := len(s.Delete); n > 0 {
		parts = append(parts, "delete "+listNames(n, func(i int) string { return s.Delete[i].Replica }))
	}
	if n := len(s.Repair); n > 0 {
		parts = append(parts, "repair "+listNames(n, func(i int) string { return s.Repair[i].Replica }))
	}
	s.Reason = ReasonUpdating
	if len(parts) == 0 {
		s.Reason = ReasonNotAvailable
	}
	// One pass over Waiting: the first names and the count of each reason.
	var shown [len(waitOrder)][]string
	var count [len(waitOrder)]int
	for _, w := range s.Waiting {
		k := slices.Index(waitOrder[:], w.Reason)
		if k < 0 {
			continue
		}
		if count[k]++; len(shown[k]) < namesShown {
			shown[k] = append(shown[k], w.Replica)
		}
	}
	first := true
	for k, reason := range waitOrder {
		if count[k] == 0 {
			continue
		}
		if first && len(parts) == 0 {
			s.Reason = reason
		}
		first = false
		parts = append(parts, messages[reason]+": "+listNames(count[k], func(i int) string { return shown[k][i] }))
	}
	if len(parts) == 0 {
		parts = append(parts, "waiting for replicas to become available")
	}
	s.Message = clip(strings.Join(parts, "; "))
}

// listNames lists the first namesShown of n names (name(i) is the i-th) and
// counts the rest.
func listNames(n int, name func(int) string) string {
	shown := make([]string, min(n, namesShown))
	for i := range shown {
		shown[i] = name(i)
	}
	if n <= namesShown {
		return strings.Join(shown, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(shown, ", "), n-namesShown)
}
