export interface Team {
  id: string;
  name: string;
  createdAt: Date;
}
