/** Histories of this many events get `continueAsNewSuggested` on the test run's Temporal server. */
export const CONTINUE_AS_NEW_SUGGESTED_AT = 300;
export const CONTINUE_AS_NEW_SETTING = 'limit.historyCount.suggestContinueAsNew';
