import { EntitySchema } from 'typeorm';

export interface Team {
  id: string;
  name: string;
  createdAt: Date;
}

export const TeamEntity = new EntitySchema<Team>({
  name: 'Team',
  tableName: 'teams',
  columns: {
    id: { type: 'uuid', primary: true },
    name: { type: 'text', unique: true },
    createdAt: { name: 'created_at', type: 'timestamptz', precision: 3, createDate: true },
  },
});
