// Package rollout paces rebuilds. kpack starts a rebuild of every Image on a Builder as soon as
// the Builder changes, and cf-hnc starts its own rebases as soon as a run image changes: a stack
// fix would start a build pod per app at once. A mutating webhook puts a scheduling gate (Gate)
// on every rebuild pod in a CF space (kpack copies a Build's reason annotation onto its pod),
// and the rollout reconciler lifts the gate from at most --max-concurrent-rebuilds pods at a
// time, stack fixes first. Pushes are not gated. A gated pod is not scheduled: nothing runs it,
// and its Build waits, neither failed nor timing out. With the manager down, the webhook fails
// open: pods are then made without the gate and run at once, as they would without cf-hnc.
//
// Only kpack's pods in CF's tree take part: a pod that a kpack Build controls, in a namespace
// that the manager caches (manager.Options caches only the namespaces of CF's tree). Anybody who
// may create pods somewhere can put kpack's label and cf-hnc's annotation on them; such pods
// must neither hold the foundation's rebuilds back nor be written by the manager. Only kpack may
// put the label on a pod (config/policies/rebuilds.yaml), and the manager may change nothing of
// a pod but the gate, in the tree only (config/policies/manager.yaml).
package rollout
