// Package docker implements replay.Engine with the Docker Engine API.
//
// The client honours DOCKER_HOST, DOCKER_API_VERSION, DOCKER_CERT_PATH and
// DOCKER_TLS_VERIFY and negotiates the API version, so it works with
// Debian 12's dockerd 20.10 (API 1.41) and current releases; it uses no call
// or field newer than API 1.41.
//
// What a step sees: a container's main process is docker-init running
// `sleep infinity` (when the daemon has an init binary), so zombies are
// reaped; steps are execs in it. docker exec would add the image's
// Config.Env (usually PATH), HOSTNAME and HOME to the exec's own variables,
// so every command runs under `env -i`: its environment is exactly
// ExecSpec.Env, nothing else. The image therefore needs an env binary
// (coreutils or busybox), which every image with a shell has.
//
// An exec cannot be killed alone in API 1.41, so when an Exec's context
// ends the whole container is killed; it can then only be removed.
package docker
