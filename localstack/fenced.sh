#!/bin/sh
# Runs a command against LocalStack and nothing else (docs/deploy.md,
# "LocalStack"): it refuses an endpoint that is not a loopback URL
# answering LocalStack's health check, and replaces every AWS credential,
# profile and credential source of the environment with LocalStack's test
# keys, so that a user's real credentials can never deploy to or test
# against AWS through the make targets.
#   localstack/fenced.sh COMMAND [ARG...]     (LOCALSTACK_URL, default http://localhost:4566)
set -eu

url=${LOCALSTACK_URL:-http://localhost:4566}
url=${url%/}

# http or https, a loopback host, an optional port, no path, no user info.
hostport=${url#http://}
hostport=${hostport#https://}
case "$url" in
http://* | https://*) ;;
*)
	echo "localstack: LOCALSTACK_URL=$url is not an http(s) URL" >&2
	exit 2
	;;
esac
case "$hostport" in
*/* | *@* | '')
	echo "localstack: LOCALSTACK_URL=$url must be scheme://host[:port] with no path or user" >&2
	exit 2
	;;
esac
case "$hostport" in
'[::1]' | '[::1]:'*) host='[::1]' ;;
*) host=${hostport%%:*} ;;
esac
case "$host" in
localhost | '[::1]') ;;
127.*)
	# 127.0.0.0/8: four dot-separated numbers.
	if ! printf '%s\n' "$host" | grep -Eq '^127\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$'; then
		echo "localstack: LOCALSTACK_URL=$url: $host is not a loopback address" >&2
		exit 2
	fi
	;;
*)
	echo "localstack: refusing LOCALSTACK_URL=$url: only a loopback LocalStack (localhost, 127.0.0.0/8, [::1]) is allowed" >&2
	exit 2
	;;
esac

if [ "${LOCALSTACK_FENCE_SKIP_HEALTH:-}" != 1 ]; then
	command -v curl >/dev/null 2>&1 || {
		echo "localstack: curl is needed to check that $url is LocalStack" >&2
		exit 2
	}
	if ! curl -sf --max-time 5 "$url/_localstack/health" >/dev/null; then
		echo "localstack: $url/_localstack/health does not answer: is LocalStack up (make localstack-up)?" >&2
		exit 2
	fi
fi

# Every way the AWS SDKs and the CDK CLI find credentials or a profile is
# cleared; only LocalStack's test keys remain, which AWS itself refuses.
exec env \
	-u AWS_PROFILE -u AWS_DEFAULT_PROFILE -u AWS_SESSION_TOKEN -u AWS_SECURITY_TOKEN \
	-u AWS_ROLE_ARN -u AWS_ROLE_SESSION_NAME -u AWS_WEB_IDENTITY_TOKEN_FILE \
	-u AWS_CONTAINER_CREDENTIALS_FULL_URI -u AWS_CONTAINER_CREDENTIALS_RELATIVE_URI \
	-u AWS_CONTAINER_AUTHORIZATION_TOKEN -u AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE \
	-u AWS_CA_BUNDLE -u AWS_SDK_LOAD_CONFIG \
	AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test \
	AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 \
	AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_EC2_METADATA_DISABLED=true \
	AWS_ENDPOINT_URL="$url" LOCALSTACK_URL="$url" \
	CDK_DEFAULT_ACCOUNT=000000000000 CDK_DEFAULT_REGION=us-east-1 \
	"$@"
