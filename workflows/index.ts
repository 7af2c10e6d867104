export { agentRunWorkflow } from './run-workflow';
export { scheduledRunWorkflow } from './scheduled-run-workflow';
export { webhookDeliveryWorkflow, webhookSweepWorkflow } from './webhook-workflows';
export { maintenanceWorkflow } from './maintenance-workflow';
