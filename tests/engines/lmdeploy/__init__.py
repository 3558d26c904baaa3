"""LMDeploy, a fourth engine made of this directory alone: a knowledge file, a probe and a fake."""
