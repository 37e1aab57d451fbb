package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
)

// maasPorts are the ports a MAAS region answers on: 443 and 5443 (TLS),
// 80 and 5240 (plain http, only used when a site allows http on a private
// network).
var maasPorts = []float64{443, 5443, 80, 5240}

// eniActions are what Lambda needs from the function's role to attach it
// to the VPC (the content of AWSLambdaVPCAccessExecutionRole, inlined so no
// managed policy is attached). EC2 does not scope them to a resource.
var eniActions = []string{
	"ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets",
	"ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses",
}

// network creates the MAAS-facing functions' security group in the
// configured VPC: no ingress; egress to the MAAS CIDRs on the MAAS ports,
// and HTTPS anywhere for the AWS APIs (through NAT or VPC endpoints) and
// the pre-deploy fetch checks.
func (b *builder) network() {
	v := b.props.VPC
	if v == nil {
		return
	}
	egress := []any{&awsec2.CfnSecurityGroup_EgressProperty{
		IpProtocol: jsii.String("tcp"), FromPort: jsii.Number(443), ToPort: jsii.Number(443), CidrIp: jsii.String("0.0.0.0/0"),
		Description: jsii.String("AWS APIs (NAT or VPC endpoints), HTTPS MAAS and bootstrap URLs"),
	}}
	for _, cidr := range v.MAASCIDRs {
		for _, port := range maasPorts {
			egress = append(egress, &awsec2.CfnSecurityGroup_EgressProperty{
				IpProtocol: jsii.String("tcp"), FromPort: jsii.Number(port), ToPort: jsii.Number(port), CidrIp: jsii.String(cidr),
				Description: jsii.String("MAAS region API"),
			})
		}
	}
	b.sg = awsec2.NewCfnSecurityGroup(b.stack, jsii.String("MAASFunctionsSecurityGroup"), &awsec2.CfnSecurityGroupProps{
		GroupDescription:    jsii.String("maasflow " + b.props.Stage + ": functions that call MAAS"),
		VpcId:               jsii.String(v.VPCID),
		SecurityGroupEgress: &egress,
	})
}

// placeInVPC attaches a MAAS-facing function to the VPC path. The VPC
// configuration is set on the CloudFormation resource directly: the L2
// construct would attach the managed AWSLambdaVPCAccessExecutionRole.
func (b *builder) placeInVPC(fn awslambda.Function, role awsiam.Role) {
	v := b.props.VPC
	if v == nil {
		return
	}
	policy := role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(eniActions...),
		Resources: jsii.Strings("*"),
	}))
	cfn := fn.Node().DefaultChild().(awslambda.CfnFunction)
	cfn.AddPropertyOverride(jsii.String("VpcConfig"), map[string]any{
		"SubnetIds":        v.SubnetIDs,
		"SecurityGroupIds": []any{b.sg.AttrGroupId()},
	})
	// Lambda checks the ENI permissions when the function is created.
	if policy.PolicyDependable != nil {
		fn.Node().AddDependency(policy.PolicyDependable)
	}
}
