#!/usr/bin/env bash
# Scenario 4 of job_test.sh on its own: the controller is SIGKILLed mid-job and restarted; the job must still
# complete with exactly its pods and no retry counted.
JOB_TEST_PART=restart exec bash "$(dirname "$0")/job_test.sh"
