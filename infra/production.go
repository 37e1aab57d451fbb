package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsbackup"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"
)

// Defaults of the production settings.
const (
	// defaultReservedConcurrency is each background function's reserved
	// concurrency outside the dev stage. 30 functions reserve 300 of the
	// account's 1,000 default; Lambda keeps 100 unreserved, so an account
	// whose limit was not raised from a new account's low default refuses
	// the deploy: set -c maasflow:reservedConcurrency=0 there.
	defaultReservedConcurrency = 10
	// defaultCLICallbackURL is the CLI's loopback redirect for the
	// authorization code flow.
	defaultCLICallbackURL = "http://localhost:8400/callback"
	// Backups: daily kept five weeks, monthly kept a year, on top of
	// point-in-time recovery (35 days).
	dailyBackupDays   = 35
	monthlyBackupDays = 365
)

// validateProduction checks the settings of infra/production.go.
func (p *MaasflowStackProps) validateProduction() []error {
	var errs []error
	if p.ReservedConcurrency < 0 {
		errs = append(errs, fmt.Errorf("context %s: want 0 or more, got %d", ctxReservedConcurrency, p.ReservedConcurrency))
	}
	for k, v := range p.Tags {
		switch {
		case k == "" || len(k) > 128:
			errs = append(errs, fmt.Errorf("context %s: tag key %q: want 1-128 characters", ctxTags, k))
		case strings.HasPrefix(strings.ToLower(k), "aws:"):
			errs = append(errs, fmt.Errorf("context %s: tag key %q: the aws: prefix is reserved", ctxTags, k))
		case k == "maasflow:stage":
			errs = append(errs, fmt.Errorf("context %s: tag key %q is set from the stage", ctxTags, k))
		case len(v) > 256:
			errs = append(errs, fmt.Errorf("context %s: tag %q: the value is longer than 256 characters", ctxTags, k))
		}
	}
	for _, u := range p.CLICallbackURLs {
		pu, err := url.Parse(u)
		loopback := err == nil && pu.Scheme == "http" && (pu.Hostname() == "localhost" || pu.Hostname() == "127.0.0.1")
		if err != nil || (pu.Scheme != "https" && !loopback) || pu.Host == "" {
			errs = append(errs, fmt.Errorf("context %s: %q: want an https URL or an http loopback URL (http://localhost:<port>/…)", ctxCLICallbackURLs, u))
		}
	}
	if (p.APICertificateARN == "") != (p.APIDomainName == "") {
		errs = append(errs, fmt.Errorf("context %s and %s: a custom domain needs both the name and the certificate", ctxAPIDomainName, ctxAPICertificateARN))
	}
	if p.APICertificateARN != "" && !strings.HasPrefix(p.APICertificateARN, "arn:aws") {
		errs = append(errs, fmt.Errorf("context %s: want an ACM certificate ARN, got %q", ctxAPICertificateARN, p.APICertificateARN))
	}
	return errs
}

// grantTable lets principal make the item calls named on the table (a
// subset of tableActions) and query the indexes named (indexActions), and
// nothing else.
func (b *builder) grantTable(principal awsiam.IPrincipal, items, indexes []string) {
	arn := b.tbl.TableArn()
	principal.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(items...),
		Resources: jsii.Strings(*arn),
	}))
	if len(indexes) == 0 {
		return
	}
	var res []*string
	for _, ix := range indexes {
		res = append(res, awscdk.Fn_Join(jsii.String(""), &[]*string{arn, jsii.String("/index/" + ix)}))
	}
	principal.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(indexActions...),
		Resources: &res,
	}))
}

// backup adds an AWS Backup plan for the table on top of its point-in-time
// recovery: PITR restores any second of the last 35 days; the plan keeps
// daily recovery points for five weeks and monthly ones for a year, in a
// vault the stack retains.
func (b *builder) backup() {
	vault := awsbackup.NewBackupVault(b.stack, jsii.String("BackupVault"), &awsbackup.BackupVaultProps{
		BackupVaultName: jsii.String(b.name("backups")),
		RemovalPolicy:   awscdk.RemovalPolicy_RETAIN,
	})
	plan := awsbackup.NewBackupPlan(b.stack, jsii.String("BackupPlan"), &awsbackup.BackupPlanProps{
		BackupPlanName: jsii.String(b.name("table")),
		BackupVault:    vault,
		BackupPlanRules: &[]awsbackup.BackupPlanRule{
			awsbackup.NewBackupPlanRule(&awsbackup.BackupPlanRuleProps{
				RuleName: jsii.String("Daily"),
				ScheduleExpression: awsevents.Schedule_Cron(&awsevents.CronOptions{
					Hour: jsii.String("3"), Minute: jsii.String("0"),
				}),
				DeleteAfter: awscdk.Duration_Days(jsii.Number(dailyBackupDays)),
			}),
			awsbackup.NewBackupPlanRule(&awsbackup.BackupPlanRuleProps{
				RuleName: jsii.String("Monthly"),
				ScheduleExpression: awsevents.Schedule_Cron(&awsevents.CronOptions{
					Day: jsii.String("1"), Hour: jsii.String("4"), Minute: jsii.String("0"),
				}),
				DeleteAfter: awscdk.Duration_Days(jsii.Number(monthlyBackupDays)),
			}),
		},
	})
	// The selection's role carries AWS Backup's own service-role policy
	// (AWSBackupServiceRolePolicyForBackup): AWS keeps it in step with
	// what a DynamoDB backup job calls; restores are an operator's act,
	// with their own role.
	sel := plan.AddSelection(jsii.String("Table"), &awsbackup.BackupSelectionOptions{
		BackupSelectionName: jsii.String(b.name("table")),
		Resources:           &[]awsbackup.BackupResource{awsbackup.BackupResource_FromDynamoDbTable(b.tbl)},
		AllowRestores:       jsii.Bool(false),
	})
	nagSuppress(sel, "AwsSolutions-IAM4", "AWS Backup's own service-role policy for backup jobs, which AWS keeps in step with "+
		"what a DynamoDB backup calls", "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSBackupServiceRolePolicyForBackup")
}
