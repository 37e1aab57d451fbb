// Package stack runs the synthesized CloudFormation template itself, with no
// AWS account: every function as the bootstrap binary the template deploys,
// with exactly the environment the template gives it, behind the Lambda
// Runtime API; the state machines' definitions with their substitutions
// resolved, in the embedded ASL runtime; DynamoDB through the AWS SDK against
// minidyn's HTTP server with the tables and indexes the template declares;
// the API function behind an API Gateway HTTP API (payload 2.0) front that
// serves only the template's routes, and the stream function behind its
// function URL; EventBridge, Secrets Manager, STS, Step Functions, KMS and
// SQS on local endpoints that record every call and check it against the
// calling function's role policy in the template. The same scenarios run
// against a stack deployed to LocalStack (MAASFLOW_STACK_TARGET). Everything
// lives in the tests (docs/deploy.md, "The stack lane" and "LocalStack").
package stack
