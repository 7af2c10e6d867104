export { agentRunWorkflow } from './run-workflow';
export { scheduledRunWorkflow } from './scheduled-run-workflow';
