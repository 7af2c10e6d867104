export { agentRunWorkflow } from './run-workflow';
