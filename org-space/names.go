package orgspace

import (
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// displayNamed is an org or a space.
type displayNamed interface {
	client.Object
	GetDisplayName() string
}

// firstWithName returns the object that owns a display name, compared case-insensitively as
// Cloud Foundry does: the oldest, ties going to the smaller name so that every reconcile of
// every object agrees. Deleted objects give up their name. It returns nil if none has it.
func firstWithName[T any, P interface {
	*T
	displayNamed
}](items []T, displayName string) P {
	var first P
	for i := range items {
		item := P(&items[i])
		if !item.GetDeletionTimestamp().IsZero() || !strings.EqualFold(item.GetDisplayName(), displayName) {
			continue
		}
		if first == nil || olderThan(item, first) {
			first = item
		}
	}
	return first
}

func olderThan(a, b client.Object) bool {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	return a.GetName() < b.GetName()
}
