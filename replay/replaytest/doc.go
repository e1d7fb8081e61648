// Package replaytest is the behaviour suite every replay.Engine must pass.
//
// The same suite runs against the real Docker engine (replay/docker) and the
// host-process fake (fixtures/fakeengine), so unit tests written against the
// fake can trust it. What a fake cannot enforce (network isolation, limits,
// users, the OOM killer, container paths) is checked only when the engine's
// Capabilities say it can.
package replaytest
