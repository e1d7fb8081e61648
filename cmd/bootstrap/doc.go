// Command bootstrap turns "how do I set this repository up?" into a committed,
// verified contract: discover, plan, verify, synth, trace, image. See README.md.
package main
