// Package config names what the deployment and the code must agree on:
// environment variable names, default resource names, and the one option set
// every Lambda handler is wrapped with in both runtimes. infra/ sets the
// variables through these constants; functions/ read them through Load.
//
// It must not import any other maasflow package except domain.
package config
